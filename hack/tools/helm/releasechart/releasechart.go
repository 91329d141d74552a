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

// Package releasechart packages the OpenVPA chart for a release (version,
// appVersion and image references set, every timestamp fixed), pushes it as
// an OCI artifact, and renders deploy/ into one install manifest with the
// release's images.
package releasechart

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/helmpath"
	"helm.sh/helm/v3/pkg/registry"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// ChartName is the chart's name, and its repository's under the registry.
const ChartName = "vertical-pod-autoscaler"

// ImageValues are the values.yaml keys of each component's image, by image name.
var ImageValues = map[string]string{
	"vpa-recommender":          "recommender",
	"vpa-updater":              "updater",
	"vpa-admission-controller": "admissionController",
}

// ChartVersion is the chart version of a release: its version without the v.
func ChartVersion(version string) string { return strings.TrimPrefix(version, "v") }

// Package returns the chart in dir as a .tgz, with version ChartVersion(version),
// appVersion version, and each component's image.repository set to
// registry/<image> and image.tag to version. Entries are sorted, owned by
// root, and dated mtime, so the same inputs give the same bytes.
func Package(dir, version, registryPath string, mtime time.Time) ([]byte, error) {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil {
			return nil, err
		}
		switch n {
		case "Chart.yaml":
			b, err = setFields(b, map[string]string{"version": ChartVersion(version), "appVersion": version})
		case "values.yaml":
			fields := map[string]string{}
			for img, key := range ImageValues {
				fields[key+".image.repository"] = strings.TrimSuffix(registryPath, "/") + "/" + img
				fields[key+".image.tag"] = version
			}
			b, err = setFields(b, fields)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		hdr := &tar.Header{Name: ChartName + "/" + n, Mode: 0o644, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	// What helm itself will make of it.
	c, err := loader.LoadArchive(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("the packaged chart does not load: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("the packaged chart: %w", err)
	}
	return buf.Bytes(), nil
}

// setFields sets dotted paths of a YAML document to strings, keeping its
// comments.
func setFields(doc []byte, fields map[string]string) ([]byte, error) {
	n, err := kyaml.Parse(string(doc))
	if err != nil {
		return nil, err
	}
	for _, path := range slices.Sorted(func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	}) {
		if err := n.SetMapField(kyaml.NewStringRNode(fields[path]), strings.Split(path, ".")...); err != nil {
			return nil, fmt.Errorf("setting %s: %w", path, err)
		}
	}
	s, err := n.String()
	return []byte(s), err
}

// PushOptions say where and how the chart is pushed.
type PushOptions struct {
	// Registry is host[:port]/path; the chart goes to oci://Registry/<name>:<version>.
	Registry string
	// PlainHTTP talks to the registry over http.
	PlainHTTP bool
	// Created is the manifest's creation annotation.
	Created time.Time
}

// Push pushes the packaged chart and returns its reference and manifest digest.
func Push(chart []byte, o PushOptions) (ref, digest string, err error) {
	opts := []registry.ClientOption{registry.ClientOptCredentialsFile(helmpath.ConfigPath(registry.CredentialsFileBasename))}
	if o.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return "", "", err
	}
	c, err := loader.LoadArchive(bytes.NewReader(chart))
	if err != nil {
		return "", "", err
	}
	ref = strings.TrimSuffix(o.Registry, "/") + "/" + c.Metadata.Name + ":" + c.Metadata.Version
	res, err := client.Push(chart, ref, registry.PushOptCreationTime(o.Created.UTC().Format(time.RFC3339)))
	if err != nil {
		return "", "", fmt.Errorf("pushing the chart to %s: %w", ref, err)
	}
	return ref, res.Manifest.Digest, nil
}

// ReadImages reads images.txt: one repository:tag@digest per line.
func ReadImages(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		ref, digest, ok := strings.Cut(line, "@")
		slash := strings.LastIndex(ref, "/")
		colon := strings.LastIndex(ref, ":")
		if !ok || slash < 0 || colon < slash {
			return nil, fmt.Errorf("images.txt: %q is not repository:tag@digest", line)
		}
		out[ref[slash+1:colon]] = ref[:colon] + "@" + digest
	}
	return out, sc.Err()
}

// Render renders the kustomization in deployDir with each image of
// ImageValues replaced by images[name] (repository@digest), as one YAML stream.
func Render(deployDir string, images map[string]string) ([]byte, error) {
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir(deployDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(deployDir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == "charts" || rel == "overlays" {
				return filepath.SkipDir
			}
			return mem.MkdirAll("/deploy/" + filepath.ToSlash(rel))
		}
		if strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile("/deploy/"+filepath.ToSlash(rel), b)
	})
	if err != nil {
		return nil, err
	}
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{"../deploy"},
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range ImageValues {
			if !yield(n) {
				return
			}
		}
	}) {
		ref, ok := images[name]
		if !ok {
			return nil, fmt.Errorf("no image %s in images.txt", name)
		}
		repo, digest, _ := strings.Cut(ref, "@")
		k.Images = append(k.Images, types.Image{Name: "ghcr.io/openvpa/" + name, NewName: repo, Digest: digest})
	}
	kb, err := kyaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := mem.MkdirAll("/release"); err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/release/kustomization.yaml", kb); err != nil {
		return nil, err
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/release")
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", deployDir, err)
	}
	return res.AsYaml()
}
