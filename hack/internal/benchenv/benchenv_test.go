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

package benchenv

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want []string
		of7  string
	}{
		{"none counts as one", 0, []string{"ps"}, "ps"},
		{"one", 1, []string{"ps"}, "ps"},
		{"three take turns", 3, []string{"ps-0", "ps-1", "ps-2"}, "ps-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Namespaces("ps", tc.n); !slices.Equal(got, tc.want) {
				t.Errorf("Namespaces %v, want %v", got, tc.want)
			}
			if got := NamespaceOf("ps", tc.n, 7); got != tc.of7 {
				t.Errorf("NamespaceOf 7: %s, want %s", got, tc.of7)
			}
		})
	}
}

func TestDefaultKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "/k")
	if got := DefaultKubeconfig(); got != "/k" {
		t.Errorf("got %s", got)
	}
	t.Setenv("KUBECONFIG", "")
	if got := DefaultKubeconfig(); got != "_output/cluster/kubeconfig" {
		t.Errorf("got %s", got)
	}
}

func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil || p <= 0 {
		t.Errorf("port %d, %v", p, err)
	}
}

func TestProcess(t *testing.T) {
	log, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p, err := StartProcess("sleep", []string{"30"}, log)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done:
		t.Fatal("done before it was stopped")
	default:
	}
	p.Stop()
	if err := <-p.Exited; err == nil {
		t.Error("a process stopped by SIGTERM exited without an error")
	}
	p.Stop() // once exited, Stop returns at once
}
