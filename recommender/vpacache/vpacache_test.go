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

package vpacache

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// decoded is a VPA as the informer decodes it from the API server's JSON.
func decoded(t *testing.T) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	const doc = `{
	"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
	"metadata": {"name": "web", "namespace": "ns", "resourceVersion": "7",
		"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"big\":true}", "team": "a"},
		"managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
	"spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
	"status": {
		"conditions": [{"type": "RecommendationProvided", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
		"recommendation": {"containerRecommendations": [
			{"containerName": "app",
			 "target": {"cpu": "250m", "memory": "262144k"},
			 "lowerBound": {"cpu": "100u", "memory": "1.5Gi"},
			 "upperBound": {"cpu": "1", "memory": "99999999999999999999"},
			 "uncappedTarget": {"cpu": "250m", "memory": "262144k"}},
			{"containerName": "sidecar", "target": {"cpu": "10m"}}]}}}`
	var v vpav1.VerticalPodAutoscaler
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestNewKeepsWhatTheRecommenderReads(t *testing.T) {
	orig := decoded(t)
	want := orig.DeepCopy()
	v := New(orig)
	if v.VerticalPodAutoscaler.Status.Recommendation != nil {
		t.Error("the decoded recommendation is still held")
	}
	if len(v.ManagedFields) != 0 {
		t.Error("managed fields are kept")
	}
	if _, ok := v.Annotations[LastAppliedAnnotation]; ok || v.Annotations["team"] != "a" {
		t.Errorf("annotations = %v, want only team=a", v.Annotations)
	}
	if !apiequality.Semantic.DeepEqual(v.Spec, want.Spec) {
		t.Error("the spec changed")
	}
	// Quantities compare by value: 262144k stays 262144k, 100u stays 100u
	// (not rounded to 1m), and a value past int64 thousandths stays exact.
	if got := v.Status(); !apiequality.Semantic.DeepEqual(got, want.Status) {
		t.Errorf("Status() = %+v, want %+v", got, want.Status)
	}
	if !v.Recommendation.Equal(want.Status.Recommendation.ContainerRecommendations) {
		t.Error("the compact recommendation does not equal the decoded one")
	}
}

func TestTransformIsIdempotent(t *testing.T) {
	once, err := Transform(decoded(t))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Transform(once)
	if err != nil {
		t.Fatal(err)
	}
	if once != twice {
		t.Error("a cached object handed back at resync was transformed again")
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: once}
	if got, _ := Transform(tomb); got != tomb {
		t.Error("a tombstone was changed")
	}
}

func TestResourcesEqual(t *testing.T) {
	q := resource.MustParse
	tests := map[string]struct {
		a    corev1.ResourceList
		b    corev1.ResourceList
		want bool
	}{
		"same":             {a: corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}, b: corev1.ResourceList{"cpu": q("1000m"), "memory": q("1073741824")}, want: true},
		"nil and empty":    {a: nil, b: corev1.ResourceList{}, want: true},
		"other value":      {a: corev1.ResourceList{"cpu": q("1")}, b: corev1.ResourceList{"cpu": q("1001m")}, want: false},
		"sub-milli":        {a: corev1.ResourceList{"cpu": q("100u")}, b: corev1.ResourceList{"cpu": q("1m")}, want: false},
		"other resource":   {a: corev1.ResourceList{"cpu": q("1")}, b: corev1.ResourceList{"memory": q("1")}, want: false},
		"one more":         {a: corev1.ResourceList{"cpu": q("1")}, b: corev1.ResourceList{"cpu": q("1"), "memory": q("1")}, want: false},
		"beyond int64 ths": {a: corev1.ResourceList{"memory": q("99999999999999999999")}, b: corev1.ResourceList{"memory": q("99999999999999999999")}, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := compactList(tc.a).Equal(tc.b); got != tc.want {
				t.Errorf("Equal = %v, want %v", got, tc.want)
			}
			if got := compactList(tc.a).List(); !apiequality.Semantic.DeepEqual(got, tc.a) && len(tc.a) > 0 {
				t.Errorf("List() = %v, want %v", got, tc.a)
			}
		})
	}
}

func TestLister(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	v := New(&vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	if err := idx.Add(v); err != nil {
		t.Fatal(err)
	}
	l := NewLister(idx)
	if got := l.Get("ns", "web"); got != v {
		t.Errorf("Get = %v, want the cached object", got)
	}
	if got := l.Get("ns", "other"); got != nil {
		t.Errorf("Get of a missing VPA = %v, want nil", got)
	}
	if got := l.List(); len(got) != 1 || got[0] != v {
		t.Errorf("List = %v", got)
	}
}
