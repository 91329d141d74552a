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
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// LabelE2E marks namespaces created by NewNamespace.
	LabelE2E = "openvpa.io/e2e"
	// EnvKeepNamespaces, when "true", keeps the namespaces of failed tests for inspection.
	EnvKeepNamespaces = "OPENVPA_E2E_KEEP_NAMESPACES"
)

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// namespaceName derives a valid, unique namespace name from a test name.
func namespaceName(testName string) string {
	base := nonName.ReplaceAllString(strings.ToLower(testName), "-")
	base = strings.Trim(base, "-")
	if len(base) > 50 {
		base = strings.TrimRight(base[:50], "-")
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	return "e2e-" + base + "-" + hex.EncodeToString(suffix)
}

// NewNamespace creates a namespace for this test and deletes it when the test ends (kept if the
// test failed and OPENVPA_E2E_KEEP_NAMESPACES=true). It returns once pods can be created in it:
// the namespace's "default" ServiceAccount exists.
func (c *Cluster) NewNamespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			Name:   namespaceName(t.Name()),
			Labels: map[string]string{LabelE2E: "true"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	name := ns.Name
	t.Cleanup(func() {
		if t.Failed() && os.Getenv(EnvKeepNamespaces) == "true" {
			t.Logf("keeping namespace %s of the failed test", name)
			return
		}
		err := c.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	WaitFor(t, time.Minute, func() (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return name
}
