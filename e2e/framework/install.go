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

package framework

import (
	"context"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstallCRDs applies deploy/crds and waits until the CRDs are established.
// It uses server-side apply: the CRDs are too large for the last-applied
// annotation, and test packages running in parallel apply them at the same
// time. They stay installed for the other packages.
func (c *Cluster) InstallCRDs(t testing.TB) {
	t.Helper()
	c.Kubectl(t, "apply", "--server-side", "--force-conflicts", "--field-manager=openvpa-e2e",
		"--filename", filepath.Join(c.RepoRoot, "deploy", "crds"))
	c.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/verticalpodautoscalers.autoscaling.k8s.io", "crd/verticalpodautoscalercheckpoints.autoscaling.k8s.io",
		"crd/verticalpodautoscalerpolicies.openvpa.io")
}

// ApplyRBAC applies a component's RBAC from deploy/rbac/<component>.yaml
// ("recommender", "updater", "admission-controller"), so that the component,
// run with ServiceAccount impersonation, is tested with the shipped manifests.
func (c *Cluster) ApplyRBAC(t testing.TB, component string) {
	t.Helper()
	c.Kubectl(t, "apply", "-f", filepath.Join(c.RepoRoot, "deploy", "rbac", component+".yaml"))
}

// AllowWebhookConfig lets the admission controller of deploy/rbac (the
// ServiceAccount kube-system/vpa-admission-controller) get, update and patch
// the MutatingWebhookConfiguration name as well as its default one, for a test
// that runs it with --webhook-config-name=name: the shipped role names only
// vpa-webhook-config. The grant (a ClusterRole and ClusterRoleBinding named
// after the configuration) goes when the test ends.
func (c *Cluster) AllowWebhookConfig(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	objName := "openvpa-e2e:webhook-config:" + name
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: objName},
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{"admissionregistration.k8s.io"},
			Resources:     []string{"mutatingwebhookconfigurations"},
			ResourceNames: []string{name},
			Verbs:         []string{"get", "update", "patch"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: objName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: objName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "vpa-admission-controller"}},
	}
	rbac := c.Client.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("granting webhook configuration %s: %v", name, err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), objName, metav1.DeleteOptions{}) })
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("granting webhook configuration %s: %v", name, err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), objName, metav1.DeleteOptions{}) })
}
