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

// TestPluginLinksNoResearchNorRecommenderApp checks the plugin's import
// direction: it may use the recommender's model, estimator and tunables,
// never its app (the binary's wiring), and no release binary links the
// research tools under hack/ (hack/replay-bounds builds on kubectl-vpa/replay,
// never the other way).
func TestPluginLinksNoResearchNorRecommenderApp(t *testing.T) {
	const module = "github.com/openvpa/openvpa/"
	out, err := exec.Command("go", "list", "-deps", module+"kubectl-vpa").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(pkg, module+"hack/"), strings.Contains(pkg, "bounds"):
			t.Errorf("kubectl-vpa links the research package %s", pkg)
		case strings.HasPrefix(pkg, module+"recommender/app") && pkg != module+"recommender/app/options/tunables":
			t.Errorf("kubectl-vpa links the recommender's %s; only recommender/app/options/tunables is shared", pkg)
		}
	}
}
