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
	"path/filepath"
	"testing"
)

// InstallCRDs applies deploy/crds and waits until both CRDs are established.
// It uses server-side apply: the CRDs are too large for the last-applied
// annotation, and test packages running in parallel apply them at the same
// time. They stay installed for the other packages.
func (c *Cluster) InstallCRDs(t testing.TB) {
	t.Helper()
	c.Kubectl(t, "apply", "--server-side", "--force-conflicts", "--field-manager=openvpa-e2e",
		"--filename", filepath.Join(c.RepoRoot, "deploy", "crds"))
	c.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/verticalpodautoscalers.autoscaling.k8s.io", "crd/verticalpodautoscalercheckpoints.autoscaling.k8s.io")
}

// ApplyRBAC applies a component's RBAC from deploy/rbac/<component>.yaml
// ("recommender", "updater", "admission-controller"), so that the component,
// run with ServiceAccount impersonation, is tested with the shipped manifests.
func (c *Cluster) ApplyRBAC(t testing.TB, component string) {
	t.Helper()
	c.Kubectl(t, "apply", "-f", filepath.Join(c.RepoRoot, "deploy", "rbac", component+".yaml"))
}
