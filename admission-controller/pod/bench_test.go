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

package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/admission-controller/review"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/target"
)

// benchFixture is a cluster of 1,000 namespaces with 10 Deployments (each
// with a ReplicaSet) and 10 VPAs each, held in informer caches.
type benchFixture struct {
	handler *Handler
	pods    []*corev1.Pod
}

func newBenchFixture(tb testing.TB, namespaces, perNamespace int) *benchFixture {
	tb.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	workloads, byKind := wellKnown(factory)
	resolver := target.NewResolver(workloads, nil, target.Options{})
	deps := factory.Apps().V1().Deployments().Informer().GetIndexer()
	rss := factory.Apps().V1().ReplicaSets().Informer().GetIndexer()
	vpas := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{TargetRefIndex: TargetRefIndexFunc})
	mode := vpav1.UpdateModeInitial
	f := &benchFixture{}
	for n := 0; n < namespaces; n++ {
		ns := fmt.Sprintf("ns-%04d", n)
		for i := 0; i < perNamespace; i++ {
			name := fmt.Sprintf("app-%02d", i)
			sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
			must(tb, deps.Add(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{Selector: sel}}))
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-5d4f", Namespace: ns,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, Controller: ptrTo(true)}}},
				Spec: appsv1.ReplicaSetSpec{Selector: sel}}
			must(tb, rss.Add(rs))
			must(tb, vpas.Add(&vpav1.VerticalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(time.Unix(int64(i), 0))},
				Spec: vpav1.VerticalPodAutoscalerSpec{
					TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
					UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
				},
				Status: vpav1.VerticalPodAutoscalerStatus{Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
					{ContainerName: "app", Target: rl("250m", "200Mi")}, {ContainerName: "sidecar", Target: rl("20m", "32Mi")},
				}}},
			}))
			if i == 0 {
				f.pods = append(f.pods, &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-5d4f-", Namespace: ns, Labels: map[string]string{"app": name},
						OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, Controller: ptrTo(true)}}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{
						ctr("app", rl("100m", "100Mi"), rl("200m", "200Mi")), ctr("sidecar", rl("10m", "16Mi"), nil),
					}},
				})
			}
		}
	}
	finder := NewFinder(vpas, resolver, nil)
	must(tb, finder.CacheSelectorsOf(byKind))
	f.handler = NewHandler(finder, fakeLimits{})
	return f
}

func must(tb testing.TB, err error) {
	if err != nil {
		tb.Fatal(err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// BenchmarkPodHandler measures one review in process: decoding the
// AdmissionReview JSON body of a two-container pod, finding its VPA among
// 10,000 in 1,000 namespaces, capping, and encoding the patch and the
// response review. Every review's latency is recorded; p50 and p99 are taken
// over all of them.
func BenchmarkPodHandler(b *testing.B) {
	f := newBenchFixture(b, 1000, 10)
	bodies := make([][]byte, len(f.pods))
	for i, p := range f.pods {
		raw, err := json.Marshal(p)
		must(b, err)
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: p.Namespace, Operation: admissionv1.Create,
				UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller"},
				Object:   kruntime.RawExtension{Raw: raw},
			},
		})
		must(b, err)
		bodies[i] = body
	}
	ctx := context.Background()
	var dec review.Decoder
	var req review.Request
	var patch, out []byte
	durations := make([]time.Duration, 0, b.N)
	// Start timing from a collected heap, so that the garbage of building
	// the fixture is not charged to the reviews.
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := dec.Decode(bodies[i%len(bodies)], &req); err != nil {
			b.Fatal(err)
		}
		res, err := f.handler.AdmitRequest(ctx, &req, patch[:0])
		if err != nil || !res.Applied {
			b.Fatalf("not applied: %v", err)
		}
		patch = res.Patch
		out = review.AppendAllowed(out[:0], req.APIVersion, req.UID, patch)
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds())/1e3, "p99-µs")
}
