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

// Package manifests checks what kustomize renders from deploy/ and its overlays, with the
// kubectl of the local cluster (as make manifests and kubectl apply -k do): deploy/ holds every
// manifest it ships, and each overlay changes exactly what it is for and nothing else.
package manifests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/e2e/framework"
)

// object is one rendered manifest, as generic JSON.
type object = map[string]any

// render runs kubectl kustomize on a folder of deploy/ and returns its objects by
// "Kind namespace/name".
func render(t *testing.T, c *framework.Cluster, dir string) map[string]object {
	t.Helper()
	out := c.Kubectl(t, "kustomize", filepath.Join(c.RepoRoot, "deploy", dir))
	objs := map[string]object{}
	for _, doc := range strings.Split(out, "\n---\n") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("deploy/%s renders a document that does not parse: %v\n%s", dir, err, doc)
		}
		if o == nil {
			continue
		}
		k := key(o)
		if _, dup := objs[k]; dup {
			t.Fatalf("deploy/%s renders %s twice", dir, k)
		}
		objs[k] = o
	}
	return objs
}

func key(o object) string {
	meta, _ := o["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	kind, _ := o["kind"].(string)
	return kind + " " + ns + "/" + name
}

// dig returns the map at path in o, creating nothing; nil if a step is missing.
func dig(o object, path ...string) map[string]any {
	cur := map[string]any(o)
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

// deepCopy copies a JSON object.
func deepCopy(t *testing.T, o object) object {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var c object
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func sortedKeys(m map[string]object) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func requireSameObjects(t *testing.T, base, overlay map[string]object, added ...string) {
	t.Helper()
	want := append(sortedKeys(base), added...)
	sort.Strings(want)
	if got := sortedKeys(overlay); !slices.Equal(got, want) {
		t.Fatalf("overlay renders\n  %s\nwant the base's objects plus %q:\n  %s",
			strings.Join(got, "\n  "), added, strings.Join(want, "\n  "))
	}
}

func diff(t *testing.T, want, got object) string {
	t.Helper()
	w, _ := yaml.Marshal(want)
	g, _ := yaml.Marshal(got)
	return "want:\n" + string(w) + "\ngot:\n" + string(g)
}

// TestDeployRendersEveryManifest: the files listed in deploy/crds, deploy/rbac and
// deploy/components (their Kustomization files, which deploy/ and the overlays build on) are
// every manifest in those folders, so nothing in them is left out of kubectl apply -k deploy/.
func TestDeployRendersEveryManifest(t *testing.T) {
	c := framework.Start(t)
	base := render(t, c, ".")
	var want []string
	for _, dir := range []string{"crds", "rbac", "components"} {
		files, err := filepath.Glob(filepath.Join(c.RepoRoot, "deploy", dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("deploy/%s: %v %v", dir, files, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range bytes.Split(data, []byte("\n---\n")) {
				var o object
				if err := yaml.Unmarshal(doc, &o); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if o != nil {
					want = append(want, key(o))
				}
			}
		}
	}
	sort.Strings(want)
	if got := sortedKeys(base); !slices.Equal(got, want) {
		t.Errorf("kustomize deploy/ renders\n  %s\nthe manifest files hold\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestLocalOverlayChangesOnlyImagesAndPlacement: deploy/overlays/local renders deploy/ with the
// three component images tagged local, and each of the three Deployments tolerating and
// selecting the real node; every other field of every object is the base's.
func TestLocalOverlayChangesOnlyImagesAndPlacement(t *testing.T) {
	c := framework.Start(t)
	base := render(t, c, ".")
	local := render(t, c, "overlays/local")
	requireSameObjects(t, base, local)

	wantToleration := []any{map[string]any{
		"key": "openvpa.io/real-node", "operator": "Equal", "value": "true", "effect": "NoSchedule",
	}}
	wantSelector := map[string]any{"openvpa.io/real-node": "true"}
	deployments := 0
	for k, got := range local {
		b := base[k]
		if got["kind"] != "Deployment" {
			if !reflect.DeepEqual(got, b) {
				t.Errorf("%s differs from the base\n%s", k, diff(t, b, got))
			}
			continue
		}
		deployments++
		name := strings.TrimPrefix(k, "Deployment kube-system/")
		if !slices.Contains([]string{"vpa-recommender", "vpa-updater", "vpa-admission-controller"}, name) {
			t.Errorf("unexpected Deployment %s", k)
			continue
		}
		pod := dig(got, "spec", "template", "spec")
		if !reflect.DeepEqual(pod["tolerations"], wantToleration) {
			t.Errorf("%s tolerations %v, want %v", k, pod["tolerations"], wantToleration)
		}
		if !reflect.DeepEqual(pod["nodeSelector"], wantSelector) {
			t.Errorf("%s nodeSelector %v, want %v", k, pod["nodeSelector"], wantSelector)
		}
		containers, _ := pod["containers"].([]any)
		if len(containers) != 1 {
			t.Fatalf("%s has %d containers, want 1", k, len(containers))
		}
		ctr, _ := containers[0].(map[string]any)
		if img := ctr["image"]; img != "ghcr.io/openvpa/"+name+":local" {
			t.Errorf("%s image %v, want ghcr.io/openvpa/%s:local", k, img, name)
		}
		// A local image is never pulled: the tag is not latest, so IfNotPresent stays.
		if p := ctr["imagePullPolicy"]; p != "IfNotPresent" {
			t.Errorf("%s imagePullPolicy %v, want IfNotPresent", k, p)
		}

		// Undo those three changes: what is left must be the base, field for field.
		undone := deepCopy(t, got)
		undonePod := dig(undone, "spec", "template", "spec")
		delete(undonePod, "tolerations")
		delete(undonePod, "nodeSelector")
		baseContainers, _ := dig(b, "spec", "template", "spec")["containers"].([]any)
		undoneContainers, _ := undonePod["containers"].([]any)
		if len(baseContainers) != 1 {
			t.Fatalf("base %s has %d containers, want 1", k, len(baseContainers))
		}
		undoneContainers[0].(map[string]any)["image"] = baseContainers[0].(map[string]any)["image"]
		if !reflect.DeepEqual(undone, b) {
			t.Errorf("%s differs from the base beyond image, tolerations and nodeSelector\n%s", k, diff(t, b, undone))
		}
	}
	if deployments != 3 {
		t.Errorf("%d Deployments, want the three components", deployments)
	}
}

// TestCertManagerOverlayOnlyAddsCertificatesAndTLSArgs: deploy/overlays/cert-manager renders
// deploy/ plus its issuers and certificates, with the admission controller pointed at the
// certificate files cert-manager writes; nothing else changes.
func TestCertManagerOverlayOnlyAddsCertificatesAndTLSArgs(t *testing.T) {
	c := framework.Start(t)
	base := render(t, c, ".")
	cm := render(t, c, "overlays/cert-manager")
	var added []string
	for k, o := range cm {
		if _, ok := base[k]; !ok {
			if api, _ := o["apiVersion"].(string); !strings.HasPrefix(api, "cert-manager.io/") {
				t.Errorf("the overlay adds %s, not a cert-manager object", k)
			}
			added = append(added, k)
		}
	}
	requireSameObjects(t, base, cm, added...)
	if len(added) == 0 {
		t.Error("the overlay adds no cert-manager objects")
	}
	const webhook = "Deployment kube-system/vpa-admission-controller"
	for k, b := range base {
		got := cm[k]
		if k != webhook {
			if !reflect.DeepEqual(got, b) {
				t.Errorf("%s differs from the base\n%s", k, diff(t, b, got))
			}
			continue
		}
		undone := deepCopy(t, got)
		ctr := dig(undone, "spec", "template", "spec")["containers"].([]any)[0].(map[string]any)
		args, _ := ctr["args"].([]any)
		tlsArgs := []any{"--client-ca-file=/etc/tls-certs/ca.crt", "--tls-cert-file=/etc/tls-certs/tls.crt", "--tls-private-key=/etc/tls-certs/tls.key"}
		if len(args) < len(tlsArgs) || !reflect.DeepEqual(args[len(args)-len(tlsArgs):], tlsArgs) {
			t.Fatalf("%s args %v: want them to end with %v", k, args, tlsArgs)
		}
		ctr["args"] = args[:len(args)-len(tlsArgs)]
		if !reflect.DeepEqual(undone, b) {
			t.Errorf("%s differs from the base beyond the TLS args\n%s", k, diff(t, b, undone))
		}
	}
}
