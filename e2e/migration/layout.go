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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/e2e/framework"
)

const (
	vpaCRD        = "verticalpodautoscalers.autoscaling.k8s.io"
	checkpointCRD = "verticalpodautoscalercheckpoints.autoscaling.k8s.io"
)

var (
	vpaGVR        = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}
	checkpointGVR = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalercheckpoints"}
)

// upstreamCRDs returns the CRDs as upstream ships them today: v1 served and stored, v1beta2 in
// the CRD neither served nor stored. They are built from deploy/crds, whose v1 schema is
// upstream's and whose versions are upstream's, so only the labels differ; upstream's own
// file is not needed.
func upstreamCRDs(t *testing.T, root string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range []string{"autoscaling.k8s.io_verticalpodautoscalers.yaml", "autoscaling.k8s.io_verticalpodautoscalercheckpoints.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "deploy", "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		names := []string{}
		for _, v := range crd.Spec.Versions {
			names = append(names, v.Name)
		}
		if slices.Sort(names); !slices.Equal(names, []string{"v1", "v1beta2"}) {
			t.Fatalf("deploy/crds/%s has versions %v, want v1 and v1beta2", f, names)
		}
		crds = append(crds, crd)
	}
	return crds
}

// withStorage returns a copy of crd whose stored version is storage, with both versions served
// (as upstream's CRDs were while v1beta2 was stored).
func withStorage(crd *apiextensionsv1.CustomResourceDefinition, storage string) *apiextensionsv1.CustomResourceDefinition {
	c := crd.DeepCopy()
	for i := range c.Spec.Versions {
		v := &c.Spec.Versions[i]
		v.Storage = v.Name == storage
		v.Served = true
		v.Deprecated, v.DeprecationWarning = false, nil
	}
	return c
}

// without returns a copy of crd without the named version: what the API server must refuse
// over a CRD that stored it.
func without(crd *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.CustomResourceDefinition {
	c := crd.DeepCopy()
	c.Spec.Versions = slices.DeleteFunc(c.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == version
	})
	return c
}

func writeYAML(t *testing.T, path string, objs ...any) {
	t.Helper()
	var docs []string
	for _, o := range objs {
		// Through a map, to drop what a manifest does not carry: status and creationTimestamp.
		j, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(j, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "status")
		if meta, ok := m["metadata"].(map[string]any); ok {
			delete(meta, "creationTimestamp")
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// record is what must survive a migration of one VPA or checkpoint.
type record struct {
	UID    string
	Spec   any
	Status any
}

// inventory is every VPA and checkpoint of a namespace, by kind and name.
type inventory map[string]record

func takeInventory(ctx context.Context, c *framework.Cluster, ns string) (inventory, error) {
	inv := inventory{}
	for kind, gvr := range map[string]schema.GroupVersionResource{"vpa": vpaGVR, "checkpoint": checkpointGVR} {
		list, err := c.Dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			inv[kind+"/"+o.GetName()] = record{UID: string(o.GetUID()), Spec: o.Object["spec"], Status: o.Object["status"]}
		}
	}
	return inv, nil
}

// requireSame fails the test unless the namespace holds exactly the VPAs and checkpoints of
// want, unchanged.
func requireSame(t *testing.T, c *framework.Cluster, ns string, want inventory) {
	t.Helper()
	got, err := takeInventory(context.Background(), c, ns)
	if err != nil {
		t.Fatalf("listing VPAs and checkpoints: %v", err)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s is lost", k)
			continue
		}
		if !reflect.DeepEqual(g, w) {
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			t.Errorf("%s changed:\n got %s\nwant %s", k, gj, wj)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

// upstreamCluster is a private control plane made to look like one running upstream VPA.
type upstreamCluster struct {
	c     *framework.Cluster
	ext   apiextensionsclient.Interface
	crds  []*apiextensionsv1.CustomResourceDefinition
	ns    string
	dir   string
	saved inventory
}

// newUpstreamCluster starts a private control plane and gives it upstream's CRDs with
// storedVersions [v1beta2, v1], holding VPAs and checkpoints of which some are stored as v1beta2.
func newUpstreamCluster(t *testing.T) *upstreamCluster {
	t.Helper()
	c := framework.StartSecond(t)
	ext, err := apiextensionsclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	u := &upstreamCluster{c: c, ext: ext, crds: upstreamCRDs(t, c.RepoRoot), dir: t.TempDir()}
	ctx := context.Background()

	// Upstream as it was while v1beta2 was stored, then objects written in that version.
	for _, crd := range u.crds {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, withStorage(crd, "v1beta2"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", crd.Name, err)
		}
	}
	u.waitServed(t)
	u.ns = c.NewNamespace(t)
	u.createObjects(t, "old", 3)

	// The upgrade to a release that stores v1: the API server adds v1 to storedVersions and keeps
	// v1beta2, since objects stored as v1beta2 remain.
	for _, crd := range u.crds {
		u.update(t, crd.Name, func(live *apiextensionsv1.CustomResourceDefinition) {
			live.Spec.Versions = crd.DeepCopy().Spec.Versions
		})
	}
	u.createObjects(t, "new", 2)
	for _, crd := range u.crds {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Status.StoredVersions, []string{"v1beta2", "v1"}) {
			t.Fatalf("%s storedVersions %v, want [v1beta2 v1]", crd.Name, got.Status.StoredVersions)
		}
	}
	u.saved, err = takeInventory(ctx, c, u.ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.saved) != 10 {
		t.Fatalf("the layout has %d VPAs and checkpoints, want 10", len(u.saved))
	}
	return u
}

// update changes a CRD, retrying on conflicts.
func (u *upstreamCluster) update(t *testing.T, name string, change func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	ctx := context.Background()
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		live, err := u.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(live)
		_, err = u.ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, live, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// waitServed waits until both CRDs are established and a whole list of each is served.
func (u *upstreamCluster) waitServed(t *testing.T) {
	t.Helper()
	u.c.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+vpaCRD, "crd/"+checkpointCRD)
	for _, gvr := range []schema.GroupVersionResource{vpaGVR, checkpointGVR} {
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			_, err := u.c.Dynamic.Resource(gvr).List(context.Background(), metav1.ListOptions{})
			return err == nil, err
		})
	}
}

// createObjects creates n VPAs, each with a recommendation in its status and one checkpoint. The
// fields are those both versions have, as an upstream that stored v1beta2 wrote them.
func (u *upstreamCluster) createObjects(t *testing.T, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		vpa := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling.k8s.io/v1",
			"kind":       "VerticalPodAutoscaler",
			"metadata":   map[string]any{"name": name, "namespace": u.ns},
			"spec": map[string]any{
				"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
				"updatePolicy": map[string]any{"updateMode": []string{"Off", "Initial", "Recreate"}[i%3]},
				"resourcePolicy": map[string]any{"containerPolicies": []any{map[string]any{
					"containerName": "app", "mode": "Auto",
					"minAllowed": map[string]any{"cpu": "10m", "memory": "20Mi"},
					"maxAllowed": map[string]any{"cpu": "2", "memory": "4Gi"},
				}}},
			},
		}}
		created, err := u.c.Dynamic.Resource(vpaGVR).Namespace(u.ns).Create(ctx, vpa, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating VPA %s: %v", name, err)
		}
		created.Object["status"] = map[string]any{
			"recommendation": map[string]any{"containerRecommendations": []any{map[string]any{
				"containerName":  "app",
				"target":         map[string]any{"cpu": fmt.Sprintf("%dm", 100+i), "memory": "262144k"},
				"lowerBound":     map[string]any{"cpu": "50m", "memory": "131072k"},
				"upperBound":     map[string]any{"cpu": "1", "memory": "1Gi"},
				"uncappedTarget": map[string]any{"cpu": fmt.Sprintf("%dm", 100+i), "memory": "262144k"},
			}}},
			"conditions": []any{map[string]any{
				"type": "RecommendationProvided", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z",
			}},
		}
		if _, err := u.c.Dynamic.Resource(vpaGVR).Namespace(u.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing the status of VPA %s: %v", name, err)
		}
		histogram := func(weights map[string]any, total float64) map[string]any {
			return map[string]any{"referenceTimestamp": "2024-05-01T00:00:00Z", "bucketWeights": weights, "totalWeight": total}
		}
		cp := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling.k8s.io/v1",
			"kind":       "VerticalPodAutoscalerCheckpoint",
			"metadata":   map[string]any{"name": name + "-app", "namespace": u.ns},
			"spec":       map[string]any{"vpaObjectName": name, "containerName": "app"},
			"status": map[string]any{
				"version":           "v3",
				"lastUpdateTime":    "2024-05-01T10:00:00Z",
				"firstSampleStart":  "2024-04-23T10:00:00Z",
				"lastSampleStart":   "2024-05-01T09:59:00Z",
				"totalSamplesCount": int64(11520 + i),
				"cpuHistogram":      histogram(map[string]any{"0": int64(10000), "17": int64(2500 + i)}, 3.25),
				"memoryHistogram":   histogram(map[string]any{"40": int64(10000)}, 1.5),
			},
		}}
		if _, err := u.c.Dynamic.Resource(checkpointGVR).Namespace(u.ns).Create(ctx, cp, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating checkpoint %s: %v", name, err)
		}
	}
}
