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

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openvpa/openvpa/hack/tools/images/ociimage"
)

func TestSpecsNameEveryImageOfTheRealNode(t *testing.T) {
	o := options{binDir: "bin", pause: "p/pause", memhog: "m/memhog", tag: "local", pauseRef: PauseRef}
	want := map[string]ociimage.Spec{
		"vpa-recommender.tar":          {Ref: "ghcr.io/openvpa/vpa-recommender:local", Binary: "bin/vpa-recommender", Path: "/vpa-recommender", User: "65534:65534"},
		"vpa-updater.tar":              {Ref: "ghcr.io/openvpa/vpa-updater:local", Binary: "bin/vpa-updater", Path: "/vpa-updater", User: "65534:65534"},
		"vpa-admission-controller.tar": {Ref: "ghcr.io/openvpa/vpa-admission-controller:local", Binary: "bin/vpa-admission-controller", Path: "/vpa-admission-controller", User: "65534:65534"},
		"pause.tar":                    {Ref: "registry.k8s.io/pause:3.10.2", Binary: "p/pause", Path: "/pause", User: "65535:65535"},
		"memhog.tar":                   {Ref: "ghcr.io/openvpa/memhog:local", Binary: "m/memhog", Path: "/memhog", User: "65534:65534"},
	}
	got := specs(o)
	if len(got) != len(want) {
		t.Errorf("%d images, want %d: %v", len(got), len(want), got)
	}
	for file, w := range want {
		if got[file] != w {
			t.Errorf("%s: %+v, want %+v", file, got[file], w)
		}
	}
}

func TestRunWritesEveryTarballAndTheList(t *testing.T) {
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Any file will do as a binary here; ociimage's tests look inside.
	write := func(p string) string {
		if err := os.WriteFile(p, []byte("#!"+p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range components {
		write(filepath.Join(binDir, "vpa-"+c))
	}
	o := options{binDir: binDir, pause: write(filepath.Join(dir, "pause")), memhog: write(filepath.Join(dir, "memhog")),
		out: filepath.Join(dir, "out"), tag: "local", pauseRef: PauseRef}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	list, err := os.ReadFile(filepath.Join(o.out, "images.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(list)), "\n")
	if len(lines) != 5 {
		t.Fatalf("images.txt:\n%s\nwant five lines", list)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || !strings.HasPrefix(f[1], "sha256:") {
			t.Errorf("line %q: want REF DIGEST FILE", l)
			continue
		}
		if _, err := os.Stat(filepath.Join(o.out, f[2])); err != nil {
			t.Error(err)
		}
	}
	if err := run(options{binDir: binDir, out: o.out, tag: "local", pauseRef: PauseRef}); err == nil {
		t.Error("run without --pause and --memhog succeeded")
	}
}
