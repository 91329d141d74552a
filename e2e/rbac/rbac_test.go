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

// Package rbac checks the least-privilege RBAC rendered from deploy/ against
// the real API server: each component's ServiceAccount may do what the
// component needs and nothing it must not.
package rbac

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/e2e/framework"
)

var rbacKinds = map[string]bool{
	"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

// applyRenderedRBAC renders deploy/ with kustomize (as make manifests does)
// and applies its RBAC objects.
func applyRenderedRBAC(t *testing.T, c *framework.Cluster) {
	t.Helper()
	rendered := c.Kubectl(t, "kustomize", filepath.Join(c.RepoRoot, "deploy"))
	var keep []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("rendered manifest does not parse: %v\n%s", err, doc)
		}
		if rbacKinds[meta.Kind] {
			keep = append(keep, doc)
		}
	}
	if len(keep) < 9 {
		t.Fatalf("rendered deploy/ has %d RBAC objects; want the ServiceAccount, roles and bindings of all three components", len(keep))
	}
	path := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(keep, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Kubectl(t, "apply", "-f", path)
}

// check is one question for kubectl auth can-i. resource is "resource",
// "resource/name" for one object, or "resource#subresource".
type check struct {
	verb, resource, namespace string
	want                      bool
}

func TestComponentPermissions(t *testing.T) {
	c := framework.Start(t)
	applyRenderedRBAC(t, c)
	ns := c.NewNamespace(t)
	tests := map[string][]check{
		"vpa-recommender": {
			{"list", "pods", ns, true},
			{"watch", "pods", ns, true},
			{"get", "pods.metrics.k8s.io", ns, true},
			{"list", "verticalpodautoscalers.autoscaling.k8s.io", ns, true},
			{"patch", "verticalpodautoscalers.autoscaling.k8s.io#status", ns, true},
			{"create", "verticalpodautoscalercheckpoints.autoscaling.k8s.io", ns, true},
			{"delete", "verticalpodautoscalercheckpoints.autoscaling.k8s.io", ns, true},
			{"get", "deployments.apps#scale", ns, true},
			{"watch", "horizontalpodautoscalers.autoscaling", ns, true},
			{"create", "leases.coordination.k8s.io", "kube-system", true},
			{"update", "leases.coordination.k8s.io/vpa-recommender-lease", "kube-system", true},
			// --node-fit and --resource-quota-fit
			{"list", "nodes", "", true},
			{"watch", "nodes", "", true},
			{"watch", "resourcequotas", ns, true},
			{"update", "nodes", "", false},
			// --policy-controller
			{"watch", "verticalpodautoscalerpolicies.openvpa.io", "", true},
			{"update", "verticalpodautoscalerpolicies.openvpa.io#status", "", true},
			{"watch", "namespaces", "", true},
			{"create", "verticalpodautoscalers.autoscaling.k8s.io", ns, true},
			{"update", "verticalpodautoscalers.autoscaling.k8s.io", ns, true},
			{"delete", "verticalpodautoscalers.autoscaling.k8s.io", ns, true},
			{"create", "events", ns, true},
			{"update", "leases.coordination.k8s.io/vpa-recommender-lease-policy", "kube-system", true},
			{"update", "verticalpodautoscalerpolicies.openvpa.io", "", false},
			{"create", "verticalpodautoscalerpolicies.openvpa.io", "", false},
			{"update", "namespaces", "", false},
			// must not
			{"update", "leases.coordination.k8s.io/vpa-updater", "kube-system", false},
			{"patch", "verticalpodautoscalers.autoscaling.k8s.io", ns, false},
			{"delete", "pods", ns, false},
			{"create", "pods#eviction", ns, false},
			{"get", "secrets", ns, false},
			{"create", "mutatingwebhookconfigurations.admissionregistration.k8s.io", "", false},
		},
		"vpa-updater": {
			{"list", "pods", ns, true},
			{"create", "pods#eviction", ns, true},
			{"patch", "pods#resize", ns, true},
			{"list", "verticalpodautoscalers.autoscaling.k8s.io", ns, true},
			{"get", "leases.coordination.k8s.io", "kube-system", true},
			{"create", "events", ns, true},
			{"update", "leases.coordination.k8s.io/vpa-updater", "kube-system", true},
			// --node-fit and --resource-quota-fit
			{"watch", "nodes", "", true},
			{"watch", "resourcequotas", ns, true},
			{"update", "resourcequotas", ns, false},
			// --yield-to-hpa
			{"watch", "horizontalpodautoscalers.autoscaling", ns, true},
			{"update", "horizontalpodautoscalers.autoscaling", ns, false},
			// must not
			{"delete", "pods", ns, false},
			{"patch", "verticalpodautoscalers.autoscaling.k8s.io#status", ns, false},
			{"create", "verticalpodautoscalercheckpoints.autoscaling.k8s.io", ns, false},
			{"get", "secrets", ns, false},
			{"update", "deployments.apps", ns, false},
		},
		"vpa-admission-controller": {
			{"list", "verticalpodautoscalers.autoscaling.k8s.io", ns, true},
			{"list", "limitranges", ns, true},
			{"create", "mutatingwebhookconfigurations.admissionregistration.k8s.io", "", true},
			{"update", "mutatingwebhookconfigurations.admissionregistration.k8s.io/vpa-webhook-config", "", true},
			{"patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io/vpa-webhook-config", "", true},
			// must not: another webhook configuration than its own
			{"update", "mutatingwebhookconfigurations.admissionregistration.k8s.io/other-webhook", "", false},
			{"get", "mutatingwebhookconfigurations.admissionregistration.k8s.io/other-webhook", "", false},
			{"update", "leases.coordination.k8s.io", "kube-system", true},
			{"list", "replicasets.apps", ns, true},
			{"watch", "horizontalpodautoscalers.autoscaling", ns, true},
			{"update", "horizontalpodautoscalers.autoscaling", ns, false},
			// --node-fit (nodes, DaemonSet pods) and --resource-quota-fit
			{"list", "nodes", "", true},
			{"watch", "pods", ns, true},
			{"watch", "resourcequotas", ns, true},
			{"get", "pods", ns, false},
			{"update", "nodes", "", false},
			// its webhook Service's EndpointSlices, in its own namespace only
			{"list", "endpointslices.discovery.k8s.io", "kube-system", true},
			{"watch", "endpointslices.discovery.k8s.io", "kube-system", true},
			{"list", "endpointslices.discovery.k8s.io", ns, false},
			{"update", "endpointslices.discovery.k8s.io", "kube-system", false},
			// must not: upstream deletes and recreates the webhook; this one never does
			{"delete", "mutatingwebhookconfigurations.admissionregistration.k8s.io", "", false},
			{"create", "pods#eviction", ns, false},
			{"patch", "verticalpodautoscalers.autoscaling.k8s.io#status", ns, false},
			{"get", "secrets", ns, false},
			{"delete", "pods", ns, false},
		},
	}
	for sa, checks := range tests {
		t.Run(sa, func(t *testing.T) {
			for _, ch := range checks {
				// "resource#sub" names a subresource; "resource/name" a single object.
				resource, sub, _ := strings.Cut(ch.resource, "#")
				args := []string{"auth", "can-i", ch.verb, resource, "--as=" + framework.ServiceAccountUser("kube-system", sa)}
				if sub != "" {
					args = append(args, "--subresource="+sub)
				}
				if ch.namespace != "" {
					args = append(args, "-n", ch.namespace)
				}
				// kubectl auth can-i exits 1 for "no"; its answer is on stdout either way.
				out, _ := c.KubectlE(args...)
				got := strings.TrimSpace(out) == "yes"
				if got != ch.want {
					t.Errorf("%s can-i %s %s (namespace %q) = %q, want %v", sa, ch.verb, ch.resource, ch.namespace, strings.TrimSpace(out), ch.want)
				}
			}
		})
	}
}
