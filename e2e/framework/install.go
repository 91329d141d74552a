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
