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
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/e2e/framework"
)

// TestRunComponentAsServiceAccount runs kubectl as a component that acts as a ServiceAccount:
// refused without RBAC, allowed once a RoleBinding grants the access.
func TestRunComponentAsServiceAccount(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	sa := ns + "/pod-reader"
	listPods := framework.Component{
		Name:           "kubectl-get-pods",
		Binary:         c.KubectlPath,
		Args:           []string{"get", "pods", "--namespace", ns},
		ServiceAccount: sa,
	}

	p := c.RunComponent(t, listPods)
	if err := p.Wait(t, time.Minute); err == nil {
		t.Fatalf("listing pods without RBAC succeeded:\n%s", p.Log())
	}
	if want := `User "system:serviceaccount:` + ns + `:pod-reader" cannot list resource "pods"`; !strings.Contains(p.Log(), want) {
		t.Fatalf("log = %q, want it to contain %q", p.Log(), want)
	}

	ctx := context.Background()
	_, err := c.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "pod-reader"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC changes reach the authorizer through an informer: allow it a moment.
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		p := c.RunComponent(t, listPods)
		return p.Wait(t, time.Minute) == nil, nil
	})
}
