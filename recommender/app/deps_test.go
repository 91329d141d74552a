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

package app

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRecommenderLinksOnlyLeanClients guards the recommender's resident
// memory: each of these client-go packages imports client-go's all-groups
// scheme (or is the shared informer factory), which links every built-in API
// group into the binary, about 16 MB of it, most paged in at start
// (docs/dev/benchmarks.md, "Decisions backed by measurements").
func TestRecommenderLinksOnlyLeanClients(t *testing.T) {
	forbidden := []string{
		"k8s.io/client-go/kubernetes",
		"k8s.io/client-go/informers",
		"k8s.io/client-go/discovery",
		"k8s.io/client-go/scale",
		"k8s.io/client-go/tools/leaderelection",
		"k8s.io/client-go/applyconfigurations",
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/openvpa/openvpa/recommender").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var found []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				found = append(found, pkg)
			}
		}
	}
	if len(found) > 0 {
		t.Errorf("the recommender links %d packages of client-go's all-groups clients, e.g. %v; use pkg/kubeclient's lean clients",
			len(found), found[:min(len(found), 5)])
	}
}

// TestRecommenderLinksNoReplay keeps analysis out of the production binary:
// the trace replay is kubectl vpa replay (kubectl-vpa/replay), and its
// research rules are a tool under hack/.
func TestRecommenderLinksNoReplay(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/openvpa/openvpa/recommender").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "replay") || strings.HasPrefix(pkg, "github.com/openvpa/openvpa/kubectl-vpa") ||
			strings.HasPrefix(pkg, "github.com/openvpa/openvpa/hack/") {
			t.Errorf("the recommender links %s", pkg)
		}
	}
}
