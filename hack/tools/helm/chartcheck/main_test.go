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
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const repo = "../../../.."

var update = flag.Bool("update", false, "write testdata/upstream-values.golden.yaml")

func TestChartInstallsWhatDeployInstalls(t *testing.T) {
	if err := run(repo, filepath.Join(repo, "hack", "tools", "helm", "chartcheck", "as-deploy.yaml"), "kube-system"); err != nil {
		t.Fatal(err)
	}
}

func TestDifferencesAreFound(t *testing.T) {
	write := func(t *testing.T, text string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	asDeploy, err := os.ReadFile(filepath.Join(repo, "hack", "tools", "helm", "chartcheck", "as-deploy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		values, namespace, want string
	}{
		"another replica count": {values: string(asDeploy) + "recommender:\n  replicas: 3\n", namespace: "kube-system",
			want: "Deployment kube-system/vpa-recommender: spec differs"},
		"the chart's own webhook registration": {values: "{}", namespace: "kube-system",
			want: "Deployment kube-system/vpa-admission-controller: spec differs"},
		"a Lease in another namespace": {values: string(asDeploy) + "recommender:\n  leaderElection:\n    resourceNamespace: leases\n", namespace: "kube-system",
			want: "Deployment kube-system/vpa-recommender: spec differs"},
		"another namespace": {values: string(asDeploy), namespace: "vpa",
			want: "the chart does not install ServiceAccount kube-system/vpa-recommender"},
		"RBAC left out": {values: string(asDeploy) + "rbac:\n  create: false\n", namespace: "kube-system",
			want: "the chart does not install ClusterRole"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(repo, write(t, tc.values), tc.namespace)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestKustomizationFeaturesItCannotApplyAreRefused(t *testing.T) {
	dir := t.TempDir()
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\npatches: []\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readKustomization(dir); err == nil || !strings.Contains(err.Error(), `"patches"`) {
		t.Errorf("readKustomization = %v, want patches refused", err)
	}
}

func TestChartFollowsItsNamespace(t *testing.T) {
	if err := checkNamespace(repo, nil); err != nil {
		t.Fatal(err)
	}
}

// TestNamespaceCheckFindsKubeSystem: a Lease left in kube-system is found.
func TestNamespaceCheckFindsKubeSystem(t *testing.T) {
	vals := map[string]any{"updater": map[string]any{"leaderElection": map[string]any{"resourceNamespace": "kube-system"}}}
	err := checkNamespace(repo, vals)
	if err == nil || !strings.Contains(err.Error(), "names kube-system") || !strings.Contains(err.Error(), "does not set --leader-elect-resource-namespace") {
		t.Errorf("checkNamespace = %v, want kube-system and the flag found", err)
	}
}

// TestUpstreamValues renders upstream's keys against the golden file and
// checks what they mean upstream.
func TestUpstreamValues(t *testing.T) {
	if err := checkUpstreamValues(repo, *update); err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "upstream-values.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`- "--recommender-interval=30s"`,                      // extraArgs, a list
		"- --leader-elect-resource-name=my-recommender-lease", // leaderElection
		"- --leader-elect-lease-duration=30s",                 //
		"- --leader-elect-resource-namespace=vpa-leases",      // updater's resourceNamespace
		`- "--in-place-skip-disruption-budget=true"`,          // updater's extraArgs
		"- --v=4",             // logLevel
		"failurePolicy: Fail", // mutatingWebhookConfiguration
		"timeoutSeconds: 10",  //
		"vpa: enabled",        // objectSelector
		"cert-manager.io/inject-ca-from: openvpa-system/vpa-webhook", // certManager
		"name: cluster-ca",                                  // issuerRef
		"renewBefore: 48h",                                  //
		"minAvailable: 1",                                   // podDisruptionBudget
		"iam.example.com/role: vpa",                         // serviceAccount.annotations
		"tier: control",                                     // podLabels
		"team: platform",                                    // commonLabels
		"name: GOMAXPROCS",                                  // extraEnv
		"priorityClassName: system-cluster-critical",        //
		"revisionHistoryLimit: 5",                           //
		"topology.kubernetes.io/zone",                       // topologySpreadConstraints
		"hostNetwork: true",                                 // admissionController.hostNetwork
		"image: registry.example.com/vpa-recommender:1.7.0", // image
		"name: regcred",                                     // imagePullSecrets
		"- --register-webhook=false",                        // registerWebhook: false
	} {
		if !strings.Contains(string(golden), want) {
			t.Errorf("rendered upstream values lack %q", want)
		}
	}
	if strings.Contains(string(golden), "kind: Secret\n") {
		t.Error("with cert-manager the chart renders a Secret of its own")
	}
}

func TestUnknownKeysAreRefused(t *testing.T) {
	if err := checkUnknownKey(repo); err != nil {
		t.Fatal(err)
	}
}

func TestRegisteredAtRuntime(t *testing.T) {
	deployment := func(args ...any) object {
		return object{"kind": "Deployment", "metadata": map[string]any{"name": "vpa-admission-controller"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"args": args}}}}}}
	}
	tests := []struct {
		name string
		objs map[string]object
		want bool
	}{
		{"the controller registers", map[string]object{"d": deployment("--reload-cert")}, true},
		{"the chart registers", map[string]object{"d": deployment("--register-webhook=false")}, false},
		{"no admission controller", map[string]object{}, false},
	}
	for _, tc := range tests {
		if got := registeredAtRuntime(tc.objs); got != tc.want {
			t.Errorf("%s: registeredAtRuntime = %v, want %v", tc.name, got, tc.want)
		}
	}
	webhook := object{"kind": "MutatingWebhookConfiguration", "apiVersion": "admissionregistration.k8s.io/v1", "metadata": map[string]any{"name": "vpa-webhook-config"}}
	deploy := map[string]object{webhook.key(): webhook}
	if err := compare(map[string]object{"d": deployment("--register-webhook=false")}, deploy); err == nil || !strings.Contains(err.Error(), "does not install") {
		t.Errorf("a chart that neither installs nor registers deploy/'s webhook configuration passed: %v", err)
	}
	registers := deployment("--reload-cert")
	if err := compare(map[string]object{registers.key(): registers}, map[string]object{webhook.key(): webhook, registers.key(): registers}); err != nil {
		t.Errorf("a chart whose controller registers the webhook: %v", err)
	}
}
