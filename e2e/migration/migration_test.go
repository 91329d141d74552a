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

package migration

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// requireStored checks the CRDs' storedVersions.
func (u *upstreamCluster) requireStored(t *testing.T, want ...string) {
	t.Helper()
	for _, name := range []string{vpaCRD, checkpointCRD} {
		crd, err := u.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(crd.Status.StoredVersions, want) {
			t.Errorf("%s storedVersions %v, want %v", name, crd.Status.StoredVersions, want)
		}
	}
}

// requireGone checks that none of the named objects exists.
func (u *upstreamCluster) requireGone(t *testing.T, objects ...string) {
	t.Helper()
	for _, o := range objects {
		args := []string{"get", o, "--ignore-not-found", "-o", "name"}
		if !strings.HasPrefix(o, "clusterrole") {
			args = append(args, "--namespace", "kube-system")
		}
		if out := u.c.Kubectl(t, args...); strings.TrimSpace(out) != "" {
			t.Errorf("%s is still there", o)
		}
	}
}

// requireOurWebhookRegistration checks that vpa-webhook-config is the one deploy/ ships, with
// its 5 s timeout, and not upstream's (30 s), which step 1 deletes.
func (u *upstreamCluster) requireOurWebhookRegistration(t *testing.T) {
	t.Helper()
	cfg, err := u.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "vpa-webhook-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("OpenVPA's webhook registration: %v", err)
	}
	if len(cfg.Webhooks) != 1 || cfg.Webhooks[0].TimeoutSeconds == nil || *cfg.Webhooks[0].TimeoutSeconds != 5 {
		t.Errorf("vpa-webhook-config is not deploy/'s (timeout 5 s): %+v", cfg.Webhooks)
	}
}

// requireSelector checks the pod selector of a kube-system Deployment.
func (u *upstreamCluster) requireSelector(t *testing.T, name string, want map[string]string) {
	t.Helper()
	d, err := u.c.Client.AppsV1().Deployments("kube-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deployment %s: %v", name, err)
	}
	if got := d.Spec.Selector.MatchLabels; !maps(got, want) {
		t.Errorf("deployment %s selects %v, want %v", name, got, want)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

var upstreamOnlyRBAC = []string{"clusterrole/system:vpa-actor", "clusterrolebinding/system:vpa-actor", "clusterrolebinding/system:vpa-target-reader-binding"}

// TestUpstreamLayoutRefusesV1OnlyCRDs: the layout is the case the document is about. The API
// server refuses, over it, CRDs that drop v1beta2, and accepts OpenVPA's (v1beta2 unserved).
func TestUpstreamLayoutRefusesV1OnlyCRDs(t *testing.T) {
	u := newUpstreamCluster(t)
	for _, crd := range u.crds {
		live, err := u.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v1only := without(crd, "v1beta2")
		v1only.ResourceVersion = live.ResourceVersion
		_, err = u.ext.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), v1only, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "storedVersions") {
			t.Errorf("%s without v1beta2: got %v, want a refusal naming storedVersions", crd.Name, err)
		}
	}
	u.c.Kubectl(t, "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", filepath.Join(u.c.RepoRoot, "deploy", "crds"))
}

// TestFromManifests: path A over upstream installed by vpa-up.sh.
func TestFromManifests(t *testing.T) {
	u := newUpstreamCluster(t)
	u.installFromManifests(t)
	u.runPath(t, pathManifests, "")
	requireSame(t, u.c, u.ns, u.saved)
	u.requireStored(t, "v1beta2", "v1")
	u.requireGone(t, upstreamOnlyRBAC...)
	u.requireOurWebhookRegistration(t)
	u.requireSelector(t, "vpa-recommender", map[string]string{"app": "vpa-recommender"})
	u.c.Kubectl(t, "get", "clusterrole", "openvpa:recommender:actor")
}

// TestFromHelmTakeover: path B1, OpenVPA's chart adopting the objects of an upstream release.
func TestFromHelmTakeover(t *testing.T) {
	u := newUpstreamCluster(t)
	helm := helmBinary(t, u.c)
	u.installWithHelm(t, helm)
	u.runPath(t, pathHelmTakeover, helm,
		"OLD_RELEASE="+oldRelease, "OLD_NAMESPACE=kube-system", "NEW_RELEASE=openvpa", "NEW_NAMESPACE=kube-system")
	requireSame(t, u.c, u.ns, u.saved)
	for _, name := range []string{vpaCRD, checkpointCRD} {
		crd, err := u.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a := crd.Annotations; a["meta.helm.sh/release-name"] != "openvpa" || a["meta.helm.sh/release-namespace"] != "kube-system" {
			t.Errorf("%s annotations %v, want OpenVPA's release", name, a)
		}
	}
	list := runHelm(t, u.c, helm, "list", "--namespace", "kube-system", "--short")
	if got := strings.Fields(list); !slices.Equal(got, []string{"openvpa"}) {
		t.Errorf("helm list: %q, want only openvpa", got)
	}
	u.requireGone(t, "clusterrole/vpa-checkpoint-actor", "clusterrole/system:vpa-actor")
}

// TestFromHelmRemove: path B2, the upstream release removed (CRDs excepted) and OpenVPA applied
// from its manifests.
func TestFromHelmRemove(t *testing.T) {
	u := newUpstreamCluster(t)
	helm := helmBinary(t, u.c)
	u.installWithHelm(t, helm)
	u.runPath(t, pathHelmRemove, helm, "OLD_RELEASE="+oldRelease, "OLD_NAMESPACE=kube-system")
	requireSame(t, u.c, u.ns, u.saved)
	if list := strings.TrimSpace(runHelm(t, u.c, helm, "list", "--all-namespaces", "--short")); list != "" {
		t.Errorf("helm still lists %q", list)
	}
	u.requireGone(t, "clusterrole/vpa-checkpoint-actor", "clusterrole/system:vpa-actor")
	u.requireSelector(t, "vpa-recommender", map[string]string{"app": "vpa-recommender"})
}

// TestStorageMigration: path A, then C's storage migration: storedVersions become [v1], every
// object is kept and rewritten as v1, so the CRDs can then drop v1beta2.
func TestStorageMigration(t *testing.T) {
	u := newUpstreamCluster(t)
	u.installFromManifests(t)
	u.runPath(t, pathManifests, "")
	u.runPath(t, pathStorage, "")
	requireSame(t, u.c, u.ns, u.saved)
	u.requireStored(t, "v1")
	// Every object is stored as v1 now: with v1beta2 gone from the CRDs, an object still written
	// as v1beta2 could not be read, and the inventory would fail.
	for _, crd := range u.crds {
		u.update(t, crd.Name, func(live *apiextensionsv1.CustomResourceDefinition) {
			live.Spec.Versions = without(crd, "v1beta2").Spec.Versions
		})
	}
	u.waitServed(t)
	requireSame(t, u.c, u.ns, u.saved)
}

// TestRollback: path A, then E, then upstream installed again: every object is kept.
func TestRollback(t *testing.T) {
	u := newUpstreamCluster(t)
	u.installFromManifests(t)
	u.runPath(t, pathManifests, "")
	u.runPath(t, pathRollback, "")
	requireSame(t, u.c, u.ns, u.saved)
	u.requireGone(t, "clusterrole/openvpa:recommender:actor", "deployment/vpa-recommender")
	// Upstream again, as vpa-up.sh applies it: its CRDs, then its components.
	crds := filepath.Join(u.dir, "upstream-crds.yaml")
	writeYAML(t, crds, u.crds[0], u.crds[1])
	u.c.Kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", crds)
	u.installFromManifests(t)
	requireSame(t, u.c, u.ns, u.saved)
}
