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

package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// tinyBinary builds a small static Go program (Go's build cache makes the
// builds after the first cheap).
func tinyBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.26.0\n",
		"main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n",
	}
	for name, content := range src {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func spec(bin string) Spec {
	return Spec{Ref: "ghcr.io/openvpa/hello:local", Binary: bin, Path: "/hello", User: "65534:65534"}
}

// untar reads a tarball into its entries, in order.
func untar(t *testing.T, data []byte) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	var hdrs []*tar.Header
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hdrs, files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, h)
		files[h.Name] = b
	}
}

func blob(t *testing.T, files map[string][]byte, h v1.Hash) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+h.Hex]
	if !ok {
		t.Fatalf("no blob %s in the tarball", h)
	}
	return b
}

func TestWriteFileMakesAnImportableSingleBinaryImage(t *testing.T) {
	bin := tinyBinary(t)
	binData, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "hello.tar")
	res, err := WriteFile(out, spec(bin))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, files := untar(t, data)

	t.Run("layout", func(t *testing.T) {
		var names []string
		for _, h := range hdrs {
			names = append(names, h.Name)
			if !h.ModTime.Equal(Epoch) {
				t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, Epoch)
			}
		}
		if len(names) != 7 || !slices.Equal(names[:4], []string{"oci-layout", "index.json", "blobs/", "blobs/sha256/"}) {
			t.Errorf("entries %q: want oci-layout, index.json, the blob folders and three blobs", names)
		}
		if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
			t.Errorf("oci-layout %s", got)
		}
		var idx v1.IndexManifest
		if err := json.Unmarshal(files["index.json"], &idx); err != nil {
			t.Fatal(err)
		}
		if len(idx.Manifests) != 1 {
			t.Fatalf("index has %d manifests, want 1", len(idx.Manifests))
		}
		m := idx.Manifests[0]
		if m.Digest != res.Digest || m.MediaType != types.OCIManifestSchema1 {
			t.Errorf("index points at %s %s, want the OCI manifest %s", m.MediaType, m.Digest, res.Digest)
		}
		if m.Platform == nil || m.Platform.OS != "linux" || m.Platform.Architecture != "amd64" {
			t.Errorf("index platform %+v, want linux/amd64", m.Platform)
		}
		for _, a := range []string{AnnotationImageName, AnnotationRefName} {
			if m.Annotations[a] != "ghcr.io/openvpa/hello:local" {
				t.Errorf("annotation %s = %q, want the full reference", a, m.Annotations[a])
			}
		}
	})

	var manifest v1.Manifest
	if err := json.Unmarshal(blob(t, files, res.Digest), &manifest); err != nil {
		t.Fatal(err)
	}

	t.Run("config", func(t *testing.T) {
		var cf v1.ConfigFile
		if err := json.Unmarshal(blob(t, files, manifest.Config.Digest), &cf); err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != "amd64" {
			t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
		}
		c := cf.Config
		if !slices.Equal(c.Entrypoint, []string{"/hello"}) || len(c.Cmd) != 0 {
			t.Errorf("entrypoint %q cmd %q: want the binary alone, args from the pod", c.Entrypoint, c.Cmd)
		}
		if c.User != "65534:65534" {
			t.Errorf("user %q", c.User)
		}
		if len(c.Env) != 0 || len(c.Labels) != 0 || len(c.ExposedPorts) != 0 || len(c.Volumes) != 0 || c.Healthcheck != nil || len(c.OnBuild) != 0 || c.StopSignal != "" {
			t.Errorf("config carries more than entrypoint and user: %+v", c)
		}
		if !cf.Created.Equal(Epoch) || len(cf.History) != 1 || !cf.History[0].Created.Equal(Epoch) {
			t.Errorf("created %v, history %+v: want the fixed epoch", cf.Created, cf.History)
		}
		if len(cf.RootFS.DiffIDs) != 1 {
			t.Errorf("diff IDs %v, want one layer", cf.RootFS.DiffIDs)
		}
	})

	t.Run("layer", func(t *testing.T) {
		if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != types.OCILayer {
			t.Fatalf("layers %+v, want one gzip OCI layer", manifest.Layers)
		}
		zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0].Digest)))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		hdrs, content := untar(t, raw)
		if len(hdrs) != 1 {
			t.Fatalf("layer entries %d, want the binary alone", len(hdrs))
		}
		h := hdrs[0]
		if h.Name != "hello" || h.Typeflag != tar.TypeReg || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(Epoch) {
			t.Errorf("binary entry %s type %c mode %o owner %d:%d mtime %v: want hello, regular, 0755, root, epoch",
				h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime)
		}
		if !bytes.Equal(content["hello"], binData) {
			t.Error("the layer's binary differs from the one given")
		}
	})

	t.Run("valid OCI layout", func(t *testing.T) {
		dir := t.TempDir()
		for _, h := range hdrs {
			p := filepath.Join(dir, filepath.FromSlash(h.Name))
			if h.Typeflag == tar.TypeDir {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(p, files[h.Name], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		idx, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		// Digests, sizes and diff IDs all agree with the content.
		if err := validate.Index(idx); err != nil {
			t.Error(err)
		}
	})
}

func TestWriteIsDeterministic(t *testing.T) {
	bin := tinyBinary(t)
	var outs [2]bytes.Buffer
	var digests [2]v1.Hash
	for i := range outs {
		img, err := Build(spec(bin))
		if err != nil {
			t.Fatal(err)
		}
		if digests[i], err = Write(&outs[i], "ghcr.io/openvpa/hello:local", img); err != nil {
			t.Fatal(err)
		}
	}
	if digests[0] != digests[1] || !bytes.Equal(outs[0].Bytes(), outs[1].Bytes()) {
		t.Errorf("two builds of the same binary differ: %s, %s", digests[0], digests[1])
	}
}

func TestWriteFileSkipsUnchangedInputs(t *testing.T) {
	bin := tinyBinary(t)
	out := filepath.Join(t.TempDir(), "hello.tar")
	first, err := WriteFile(out, spec(bin))
	if err != nil || first.UpToDate {
		t.Fatalf("first write: %+v, %v", first, err)
	}
	again, err := WriteFile(out, spec(bin))
	if err != nil || !again.UpToDate || again.Digest != first.Digest {
		t.Fatalf("unchanged inputs: %+v, %v; want up to date with digest %s", again, err, first.Digest)
	}

	otherUser := spec(bin)
	otherUser.User = "1000:1000"
	changed, err := WriteFile(out, otherUser)
	if err != nil || changed.UpToDate || changed.Digest == first.Digest {
		t.Fatalf("another user: %+v, %v; want a new image", changed, err)
	}

	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := WriteFile(out, otherUser)
	if err != nil || rebuilt.UpToDate || rebuilt.Digest == changed.Digest {
		t.Fatalf("another binary: %+v, %v; want a new image", rebuilt, err)
	}

	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	restored, err := WriteFile(out, otherUser)
	if err != nil || restored.UpToDate || restored.Digest != rebuilt.Digest {
		t.Fatalf("tarball deleted: %+v, %v; want it written again, digest %s", restored, err, rebuilt.Digest)
	}
}

func TestBuildRejectsIncompleteSpecs(t *testing.T) {
	bin := tinyBinary(t)
	tests := map[string]func(*Spec){
		"no tag":            func(s *Spec) { s.Ref = "ghcr.io/openvpa/hello" },
		"a port, no tag":    func(s *Spec) { s.Ref = "localhost:5000/hello" },
		"a digest":          func(s *Spec) { s.Ref = "ghcr.io/openvpa/hello@sha256:" + strings.Repeat("0", 64) },
		"upper case":        func(s *Spec) { s.Ref = "ghcr.io/OpenVPA/hello:local" },
		"relative path":     func(s *Spec) { s.Path = "hello" },
		"root as path":      func(s *Spec) { s.Path = "/" },
		"unclean path":      func(s *Spec) { s.Path = "/a/../hello" },
		"no user":           func(s *Spec) { s.User = "" },
		"no binary":         func(s *Spec) { s.Binary = "" },
		"binary is missing": func(s *Spec) { s.Binary = filepath.Join(t.TempDir(), "none") },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			s := spec(bin)
			mutate(&s)
			if _, err := Build(s); err == nil {
				t.Errorf("Build(%+v) succeeded", s)
			}
		})
	}
}
