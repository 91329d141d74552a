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

// Package verify tests the checks make verify runs that are scripts of
// their own: an untidy go.mod and a lint finding each fail them.
package verify

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func script(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", name), args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const goMod = "module example.com/m\n\ngo 1.26.0\n"

func TestVerifyGoModFailsOnAnUntidyModule(t *testing.T) {
	tests := map[string]struct {
		gomod   string
		wantErr bool
	}{
		"tidy": {gomod: goMod},
		// A requirement nothing imports: go mod tidy removes it.
		"unused requirement": {gomod: goMod + "\nrequire github.com/google/uuid v1.6.0\n", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := writeModule(t, map[string]string{"go.mod": tc.gomod, "main.go": "package main\n\nfunc main() {}\n"})
			out, err := script(t, "verify-gomod.sh", dir)
			if (err != nil) != tc.wantErr {
				t.Fatalf("verify-gomod.sh: %v, want failure %v\n%s", err, tc.wantErr, out)
			}
			if tc.wantErr && !strings.Contains(out, "is not tidy") {
				t.Errorf("output does not say why:\n%s", out)
			}
		})
	}
}

func TestVerifyLintFailsOnAFinding(t *testing.T) {
	// A stand-in for client-go, so the module builds offline.
	clientGo := map[string]string{
		"cg/go.mod":                  "module k8s.io/client-go\n\ngo 1.26.0\n",
		"cg/kubernetes/clientset.go": "package kubernetes\n\n// Interface is a clientset.\ntype Interface interface{}\n",
	}
	withClientGo := goMod + "\nrequire k8s.io/client-go v0.0.0\n\nreplace k8s.io/client-go => ./cg\n"
	tests := map[string]struct {
		gomod   string
		files   map[string]string
		lib     string
		wantErr string
	}{
		"clean": {lib: "package lib\n\nimport (\n\t\"fmt\"\n\t\"io\"\n)\n\n// Hello writes to w.\nfunc Hello(w io.Writer) { fmt.Fprintln(w, \"hello\") }\n"},
		// Library code must not print: forbidigo.
		"printing in library code": {
			lib:     "package lib\n\nimport \"fmt\"\n\n// Hello prints.\nfunc Hello() { fmt.Println(\"hello\") }\n",
			wantErr: "forbidigo",
		},
		// One client stack: library code must not import the clientset.
		"the clientset in library code": {
			gomod: withClientGo, files: clientGo,
			lib:     "package lib\n\nimport \"k8s.io/client-go/kubernetes\"\n\n// C is a client.\nvar C kubernetes.Interface\n",
			wantErr: "depguard",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"go.mod": goMod, "lib/lib.go": tc.lib}
			if tc.gomod != "" {
				files["go.mod"] = tc.gomod
			}
			for name, content := range tc.files {
				files[name] = content
			}
			dir := writeModule(t, files)
			out, err := script(t, "verify-lint.sh", dir)
			if (err != nil) != (tc.wantErr != "") {
				t.Fatalf("verify-lint.sh: %v, want failure %v\n%s", err, tc.wantErr != "", out)
			}
			if tc.wantErr != "" && !strings.Contains(out, tc.wantErr) {
				t.Errorf("output lacks %q:\n%s", tc.wantErr, out)
			}
		})
	}
}
