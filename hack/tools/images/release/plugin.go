/*
Copyright The OpenVPA Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package release

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// PluginPlatforms are the platforms the kubectl plugin is released for.
var PluginPlatforms = []Platform{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// PluginBinary is the plugin's file name on p.
func PluginBinary(p Platform) string {
	if p.OS == "windows" {
		return "kubectl-vpa.exe"
	}
	return "kubectl-vpa"
}

// PluginArchiveName is the archive of the plugin for p: a zip on Windows,
// a gzipped tar elsewhere.
func PluginArchiveName(version string, p Platform) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("kubectl-vpa_%s_%s_%s%s", version, p.OS, p.Arch, ext)
}

// Archive is a written plugin archive.
type Archive struct {
	Platform Platform `json:"-"`
	// Name is the file name, e.g. kubectl-vpa_v1.2.3_linux_amd64.tar.gz.
	Name string `json:"name"`
	// OS and Arch are the platform's.
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// SHA256 is the hex digest of the file.
	SHA256 string `json:"sha256"`
}

// PluginArchive returns the archive of the plugin binary for p and the
// licence: two entries in name order, fixed modes and owner, every time mtime.
func PluginArchive(p Platform, binary, license []byte, mtime time.Time) ([]byte, error) {
	files := []file{
		{name: "LICENSE", mode: 0o644, data: license},
		{name: PluginBinary(p), mode: 0o755, data: binary},
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	if p.OS == "windows" {
		zw := zip.NewWriter(&buf)
		for _, f := range files {
			h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: mtime.UTC()}
			h.SetMode(os.FileMode(f.mode))
			w, err := zw.CreateHeader(h)
			if err != nil {
				return nil, err
			}
			if _, err := w.Write(f.data); err != nil {
				return nil, err
			}
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	tarred, err := tarOf(files, mtime)
	if err != nil {
		return nil, err
	}
	// No name and a zero time in the gzip header: the bytes depend on the
	// content alone.
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(tarred); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SHA256Hex is the hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// SHA256Sums is a sha256sum -c file of the named digests, sorted by name.
func SHA256Sums(sums map[string]string) []byte {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return []byte(b.String())
}

// The krew plugin manifest (krew's index format, apiVersion v1alpha2).
type krewPlugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   krewMeta       `json:"metadata"`
	Spec       krewPluginSpec `json:"spec"`
}

type krewMeta struct {
	Name string `json:"name"`
}

type krewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector krewSelector `json:"selector"`
	URI      string       `json:"uri"`
	SHA256   string       `json:"sha256"`
	Bin      string       `json:"bin"`
}

type krewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// KrewAPIVersion is the apiVersion of krew plugin manifests.
const KrewAPIVersion = "krew.googlecontainertools.github.com/v1alpha2"

// KrewManifest is the krew manifest of plugin "vpa" for the archives, each
// downloaded from downloadURL/<name>.
func KrewManifest(version, homepage, downloadURL string, archives []Archive) ([]byte, error) {
	if len(archives) == 0 {
		return nil, fmt.Errorf("no plugin archives")
	}
	m := krewPlugin{
		APIVersion: KrewAPIVersion,
		Kind:       "Plugin",
		Metadata:   krewMeta{Name: "vpa"},
		Spec: krewPluginSpec{
			Version:          version,
			Homepage:         homepage,
			ShortDescription: "Explain and report Vertical Pod Autoscaler recommendations",
			Description: "kubectl vpa explains why a VerticalPodAutoscaler recommends what it does\n" +
				"(histogram percentiles, confidence, capping, what the updater will do), reports\n" +
				"requests against recommendations across a cluster with the savings, exports\n" +
				"recommendations as patches, and replays a usage trace through the recommender.\n" +
				"It works with OpenVPA and with the upstream Vertical Pod Autoscaler.\n",
		},
	}
	sorted := slices.Clone(archives)
	slices.SortFunc(sorted, func(a, b Archive) int { return strings.Compare(a.Name, b.Name) })
	base := strings.TrimSuffix(downloadURL, "/")
	for _, a := range sorted {
		m.Spec.Platforms = append(m.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": a.OS, "arch": a.Arch}},
			URI:      base + "/" + a.Name,
			SHA256:   a.SHA256,
			Bin:      PluginBinary(Platform{OS: a.OS, Arch: a.Arch}),
		})
	}
	return yaml.Marshal(m)
}
