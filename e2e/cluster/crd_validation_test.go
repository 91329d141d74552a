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

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openvpa/openvpa/e2e/framework"
)

// TestVPACRDRejectsInvalidObjects applies invalid VPAs with kubectl, as a user
// would, and checks the API server's message names the field and the rule.
// It also applies the upstream-style fixture with every field, which must be
// accepted unchanged.
func TestVPACRDRejectsInvalidObjects(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	c.InstallCRDs(t)

	vpa := func(spec string) string {
		return "apiVersion: autoscaling.k8s.io/v1\nkind: VerticalPodAutoscaler\nmetadata:\n  name: bad\nspec:\n" +
			"  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n" + spec
	}
	tests := []struct {
		name     string
		manifest string
		want     []string
	}{
		{
			name:     "unknown update mode",
			manifest: vpa("  updatePolicy: {updateMode: Sometimes}\n"),
			want:     []string{"spec.updatePolicy.updateMode", `Unsupported value: "Sometimes"`},
		},
		{
			name:     "negative minReplicas",
			manifest: vpa("  updatePolicy: {minReplicas: -1}\n"),
			want:     []string{"spec.updatePolicy.minReplicas", "greater than or equal to 1"},
		},
		{
			name:     "startup boost of type Factor without a factor",
			manifest: vpa("  startupBoost: {cpu: {type: Factor}}\n"),
			want:     []string{"spec.startupBoost.cpu", "factor is required when type is Factor and forbidden otherwise"},
		},
		{
			name:     "startup boost with a quantity but type Factor",
			manifest: vpa("  startupBoost: {cpu: {type: Factor, factor: 2, quantity: \"1\"}}\n"),
			want:     []string{"quantity is required when type is Quantity and forbidden otherwise"},
		},
		{
			name: "missing targetRef",
			manifest: "apiVersion: autoscaling.k8s.io/v1\nkind: VerticalPodAutoscaler\nmetadata:\n  name: bad\nspec:\n" +
				"  updatePolicy: {updateMode: \"Off\"}\n",
			want: []string{"spec.targetRef", "Required value"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vpa.yaml")
			if err := os.WriteFile(path, []byte(tc.manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := c.KubectlE("apply", "-n", ns, "-f", path)
			if err == nil {
				t.Fatalf("the API server accepted an invalid VPA:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}

	t.Run("upstream fixture with every field is accepted", func(t *testing.T) {
		fixture := filepath.Join(c.RepoRoot, "apis", "autoscaling", "v1", "testdata", "vpa-every-field.yaml")
		raw, err := os.ReadFile(fixture)
		if err != nil {
			t.Fatal(err)
		}
		// Status is written through its subresource; the spec is what users apply.
		manifest, _, _ := strings.Cut(string(raw), "\nstatus:")
		manifest = strings.Replace(manifest, "namespace: default", "namespace: "+ns, 1)
		path := filepath.Join(t.TempDir(), "vpa.yaml")
		if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		c.Kubectl(t, "apply", "-f", path)
		got := c.Kubectl(t, "get", "vpa", "hamster-vpa", "-n", ns, "-o", "jsonpath={.spec.resourcePolicy.containerPolicies[2].memoryAggregationIntervalCount} {.spec.startupBoost.cpu.factor} {.spec.updatePolicy.evictionRequirements[1].changeRequirement}")
		if got != "24 3 TargetLowerThanRequests" {
			t.Errorf("stored VPA lost fields: got %q", got)
		}
	})
}
