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
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeBuilder writes a small file naming the package and platform instead
// of compiling.
type fakeBuilder struct{}

func (fakeBuilder) Build(_ context.Context, pkg string, p Platform, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, []byte("#!fake "+pkg+" "+p.String()+"\n"), 0o755)
}

var testMeta = Meta{
	Version: "v1.2.3",
	Commit:  "0123456789abcdef0123456789abcdef01234567",
	Source:  "https://github.com/openvpa/openvpa",
	Created: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC),
}

func testRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"LICENSE":      "Apache License 2.0 (test)\n",
		"CHANGELOG.md": "# Changelog\n\n## [Unreleased]\n\n- next\n\n## [1.2.3] - 2026-12-05\n\n### Added\n\n- everything\n",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testOptions(t *testing.T, repo string) Options {
	return Options{
		Meta: testMeta, Registry: "registry.example.com:5000/openvpa", RepoRoot: repo,
		Out: filepath.Join(t.TempDir(), "v1.2.3"), DownloadURL: "https://example.com/dl/v1.2.3",
		Builder: fakeBuilder{}, CABundle: []byte("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"),
	}
}

// readTree returns every file under dir by relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunTwiceGivesTheSameBytesAndDigests(t *testing.T) {
	repo := testRepo(t)
	a, b := testOptions(t, repo), testOptions(t, repo)
	ma, err := Run(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ma.Images {
		if ma.Images[i].Digest != mb.Images[i].Digest {
			t.Errorf("%s: digest %s then %s", ma.Images[i].Name, ma.Images[i].Digest, mb.Images[i].Digest)
		}
	}
	ta, tb := readTree(t, a.Out), readTree(t, b.Out)
	if len(ta) != len(tb) {
		t.Fatalf("%d files, then %d", len(ta), len(tb))
	}
	for n, content := range ta {
		if !bytes.Equal(content, tb[n]) {
			t.Errorf("%s differs between two builds", n)
		}
	}
	for _, want := range []string{ManifestFile, ImagesFile, SumsFile, KrewFile, NotesFile, "oci/index.json",
		"kubectl-vpa_v1.2.3_linux_amd64.tar.gz", "kubectl-vpa_v1.2.3_windows_arm64.zip"} {
		if _, ok := ta[want]; !ok {
			t.Errorf("no %s among %v", want, slices.Sorted(func(y func(string) bool) {
				for k := range ta {
					if !y(k) {
						return
					}
				}
			}))
		}
	}
	if _, ok := ta["bin/linux-amd64/vpa-recommender"]; ok {
		t.Error("the binaries were left in the release folder")
	}
	if got := string(ta[NotesFile]); !strings.Contains(got, "- everything") || strings.Contains(got, "- next") {
		t.Errorf("release notes %q, want the 1.2.3 section", got)
	}
	// A different commit date changes the digests: the timestamps are inputs.
	c := testOptions(t, repo)
	c.Created = c.Created.Add(time.Second)
	mc, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if mc.Images[0].Digest == ma.Images[0].Digest {
		t.Error("the digest does not depend on the commit date")
	}
}

func TestImageIndexContents(t *testing.T) {
	o := testOptions(t, testRepo(t))
	m, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := layout.FromPath(filepath.Join(o.Out, LayoutDir))
	if err != nil {
		t.Fatal(err)
	}
	root, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	rm, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Manifests) != len(Components) {
		t.Fatalf("the layout holds %d indexes, want %d", len(rm.Manifests), len(Components))
	}
	for i, d := range rm.Manifests {
		img := m.Images[i]
		if d.Digest.String() != img.Digest {
			t.Errorf("%s: layout digest %s, release.json %s", img.Name, d.Digest, img.Digest)
		}
		if got, want := d.Annotations["org.opencontainers.image.ref.name"], "registry.example.com:5000/openvpa/"+img.Name+":v1.2.3"; got != want {
			t.Errorf("ref name %q, want %q", got, want)
		}
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if im.Annotations[LabelVersion] != "v1.2.3" {
			t.Errorf("%s: index annotations %v", img.Name, im.Annotations)
		}
		var platforms []string
		for _, md := range im.Manifests {
			platforms = append(platforms, md.Platform.OS+"/"+md.Platform.Architecture)
			im, err := idx.Image(md.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img.Name, md.Platform, im)
		}
		if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
			t.Errorf("%s: platforms %v, want %v", img.Name, platforms, want)
		}
	}
}

func checkImage(t *testing.T, name string, p *v1.Platform, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("%s %s: config says %s/%s", name, p, cf.OS, cf.Architecture)
	}
	if cf.Config.User != "65534:65534" {
		t.Errorf("%s: user %q", name, cf.Config.User)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/" + name}) {
		t.Errorf("%s: entrypoint %v", name, cf.Config.Entrypoint)
	}
	want := map[string]string{
		LabelSource: "https://github.com/openvpa/openvpa", LabelVersion: "v1.2.3", LabelLicenses: "Apache-2.0",
		LabelRevision: testMeta.Commit, LabelCreated: "2026-12-05T10:00:00Z",
	}
	for k, v := range want {
		if cf.Config.Labels[k] != v {
			t.Errorf("%s: label %s = %q, want %q", name, k, cf.Config.Labels[k], v)
		}
	}
	if !cf.Created.Time.Equal(testMeta.Created) {
		t.Errorf("%s: created %v", name, cf.Created)
	}
	files := imageFiles(t, img)
	if !strings.Contains(string(files["etc/ssl/certs/ca-certificates.crt"]), "BEGIN CERTIFICATE") {
		t.Errorf("%s: no CA bundle", name)
	}
	if !strings.Contains(string(files["etc/passwd"]), "nobody:x:65534:65534:") || !strings.Contains(string(files["etc/group"]), "nobody:x:65534:") {
		t.Errorf("%s: passwd %q, group %q", name, files["etc/passwd"], files["etc/group"])
	}
	if got := string(files[name]); got != fmt.Sprintf("#!fake ./%s %s\n", strings.TrimPrefix(name, "vpa-"), p) {
		t.Errorf("%s: binary %q, not the one built for %s", name, got, p)
	}
}

// imageFiles reads the regular files of every layer of img.
func imageFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !h.ModTime.Equal(testMeta.Created) {
				t.Errorf("%s: mtime %v", h.Name, h.ModTime)
			}
			if h.Typeflag == tar.TypeReg {
				out[h.Name], _ = io.ReadAll(tr)
			}
		}
		rc.Close()
	}
	return out
}

func TestCABundleParses(t *testing.T) {
	b := CABundle()
	if n := bytes.Count(b, []byte("BEGIN CERTIFICATE")); n < 100 {
		t.Errorf("%d certificates in the bundle", n)
	}
	if !bytes.Equal(b, CABundle()) {
		t.Error("the bundle is not the same twice")
	}
}

func TestPluginArchives(t *testing.T) {
	for _, p := range PluginPlatforms {
		b, err := PluginArchive(p, []byte("bin"), []byte("lic"), testMeta.Created)
		if err != nil {
			t.Fatal(err)
		}
		if p.OS == "windows" {
			if !bytes.HasPrefix(b, []byte("PK")) {
				t.Errorf("%s: not a zip", p)
			}
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		var names []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, h.Name)
		}
		if want := []string{"LICENSE", "kubectl-vpa"}; !slices.Equal(names, want) {
			t.Errorf("%s: entries %v, want %v", p, names, want)
		}
	}
}

func TestKrewManifestGolden(t *testing.T) {
	var archives []Archive
	for i, p := range PluginPlatforms {
		archives = append(archives, Archive{Name: PluginArchiveName("v1.2.3", p), OS: p.OS, Arch: p.Arch, SHA256: fmt.Sprintf("%064x", i+1)})
	}
	slices.Reverse(archives) // the manifest sorts them
	got, err := KrewManifest("v1.2.3", "https://github.com/openvpa/openvpa", "https://example.com/dl/v1.2.3/", archives)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "krew-vpa.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("krew manifest differs from %s (go test -update):\n%s", golden, got)
	}
}

func TestSHA256Sums(t *testing.T) {
	got := string(SHA256Sums(map[string]string{"b.zip": "22", "a.tar.gz": "11"}))
	if want := "11  a.tar.gz\n22  b.zip\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestChangelogSection(t *testing.T) {
	const log = "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n- coming\n\n## [1.2.3] - 2026-12-05\n\n- shipped\n\n## [v1.2.2]\n\n- older\n\n[Unreleased]: https://example.com/compare\n"
	tests := []struct {
		name, log, version, want, err string
	}{
		{name: "its own section", log: log, version: "v1.2.3", want: "- shipped\n"},
		{name: "a heading with v", log: log, version: "v1.2.2", want: "- older\n"},
		{name: "a pre-release takes Unreleased", log: log, version: "v1.3.0-rc.1", want: "- coming\n"},
		{name: "a release needs its own section", log: log, version: "v1.3.0", err: "no section for v1.3.0"},
		{name: "no Unreleased", log: "## [1.0.0]\n\n- x\n", version: "v1.1.0-rc.1", err: "nor an Unreleased"},
		{name: "empty section", log: "## [Unreleased]\n\n## [1.0.0]\n- x\n", version: "v1.1.0-rc.1", err: "Unreleased section is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChangelogSection(tt.log, tt.version)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name, version, registry, err string
	}{
		{name: "release", version: "v1.2.3", registry: "ghcr.io/openvpa"},
		{name: "pre-release on loopback", version: "v0.0.0-e2e.1", registry: "127.0.0.1:5000/openvpa"},
		{name: "localhost", version: "v1.0.0", registry: "localhost/openvpa"},
		{name: "no v", version: "1.2.3", registry: "ghcr.io/openvpa", err: "not a release version"},
		{name: "two numbers", version: "v1.2", registry: "ghcr.io/openvpa", err: "not a release version"},
		{name: "leading zero", version: "v1.02.3", registry: "ghcr.io/openvpa", err: "not a release version"},
		{name: "build metadata", version: "v1.2.3+meta", registry: "ghcr.io/openvpa", err: "build metadata"},
		{name: "no version", registry: "ghcr.io/openvpa", err: "VERSION is required"},
		{name: "no registry", version: "v1.2.3", err: "REGISTRY is required"},
		{name: "scheme", version: "v1.2.3", registry: "https://ghcr.io/openvpa", err: "without a scheme"},
		{name: "no host", version: "v1.2.3", registry: "openvpa/images", err: "registry host"},
		{name: "upper case", version: "v1.2.3", registry: "ghcr.io/OpenVPA", err: "REGISTRY"},
		{name: "trailing slash", version: "v1.2.3", registry: "ghcr.io/openvpa/", err: "trailing slash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t, testRepo(t))
			o.Version, o.Registry = tt.version, tt.registry
			err := o.validate()
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
		})
	}
}

func TestCheckClean(t *testing.T) {
	if err := CheckClean("\n"); err != nil {
		t.Errorf("clean tree: %v", err)
	}
	err := CheckClean(" M Makefile\n?? new.go\n")
	if err == nil || !strings.Contains(err.Error(), "ALLOW_DIRTY=1") || !strings.Contains(err.Error(), "new.go") {
		t.Errorf("dirty tree: %v", err)
	}
}

func TestLdflags(t *testing.T) {
	want := "-X github.com/openvpa/openvpa/pkg/version.version=v1.2.3 -X github.com/openvpa/openvpa/pkg/version.commit=" +
		testMeta.Commit + " -X github.com/openvpa/openvpa/pkg/version.buildDate=2026-12-05T10:00:00Z"
	if got := Ldflags(testMeta); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestFinalize(t *testing.T) {
	o := testOptions(t, testRepo(t))
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if err := Finalize(o.Out); err == nil {
		t.Fatal("Finalize without chart.json succeeded")
	}
	chart := `{"name":"vertical-pod-autoscaler","version":"1.2.3","reference":"oci://r/c:1.2.3","digest":"sha256:ab"}`
	if err := os.WriteFile(filepath.Join(o.Out, ChartFile), []byte(chart), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.Out, InstallFile), []byte("---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Finalize(o.Out); err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Chart == nil || m.Chart.Digest != "sha256:ab" || m.Install != InstallFile || len(m.Images) != 3 {
		t.Errorf("release.json after Finalize: %+v", m)
	}
}
