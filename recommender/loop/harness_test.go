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

package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpafake "github.com/openvpa/openvpa/apis/generated/clientset/versioned/fake"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned/typed/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/metrics"
	"github.com/openvpa/openvpa/recommender/model"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

var start = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// fakeResolver resolves Deployment targetRefs to app=<name>; a name starting
// with "child" is reported as not topmost.
type fakeResolver struct{}

func (fakeResolver) Resolve(_ context.Context, v *vpav1.VerticalPodAutoscaler) (*target.Target, error) {
	ref := target.RefFromTargetRef(v.Namespace, v.Spec.TargetRef)
	if strings.HasPrefix(ref.Name, "child") {
		return nil, &target.ConfigError{Message: fmt.Sprintf("The target %s has a parent controller but it should point to a topmost well-known or scalable controller", ref)}
	}
	return &target.Target{VPA: v, Ref: ref, Selector: labels.SelectorFromSet(labels.Set{"app": ref.Name})}, nil
}

// TopmostController maps ReplicaSet <name>-rs to Deployment <name>; other
// refs are their own topmost controller.
func (fakeResolver) TopmostController(_ context.Context, ref target.Ref) (*target.Ref, error) {
	if name, ok := strings.CutSuffix(ref.Name, "-rs"); ok && ref.Kind == "ReplicaSet" {
		return &target.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ref.Namespace, Name: name}, nil
	}
	return &ref, nil
}

// usageFunc serves the current usage of every pod.
type usageFunc func(keep func(types.NamespacedName) bool) ([]input.ContainerUsage, error)

func (f usageFunc) Usage(_ context.Context, keep func(types.NamespacedName) bool) ([]input.ContainerUsage, error) {
	return f(keep)
}

type harness struct {
	t      *testing.T
	clk    *clocktesting.FakeClock
	client *vpafake.Clientset
	vpas   cache.Indexer
	pods   cache.Indexer
	rec    *Recommender
	// deps are rec's; withDeps changes them and makes a new rec.
	deps Deps
	// usage per pod: cpu millicores, memory bytes
	cpu, mem  map[string]int64
	metricErr error
	// keep is what the loop last asked the metrics source to keep.
	keep func(types.NamespacedName) bool
	ooms []input.OOM
	cfg  Config
	// limitRanges per namespace, for Deps.LimitRanges.
	limitRanges map[string]limitrange.Merged
	// hpas per namespace, for Deps.HPAs; hpasUnknown makes them unknown
	// (the cache has not synced).
	hpas        map[string][]*autoscalingv2.HorizontalPodAutoscaler
	hpasUnknown bool
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	h := &harness{
		t:      t,
		clk:    clocktesting.NewFakeClock(start),
		client: vpafake.NewSimpleClientset(),
		vpas:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		pods:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		cpu:    map[string]int64{},
		mem:    map[string]int64{},
	}
	h.cfg = Config{
		RecommenderName:          vpav1.DefaultRecommenderName,
		Interval:                 time.Minute,
		CheckpointsGCInterval:    10 * time.Minute,
		CheckpointsTimeout:       time.Minute,
		CheckpointsWriteInterval: 10 * time.Minute,
		Workers:                  4,
	}
	if mutate != nil {
		mutate(&h.cfg)
	}
	h.deps = h.defaultDeps()
	h.rec = h.newRecommender()
	return h
}

// newRecommender returns a new Recommender with the harness's settings and
// collaborators, as another replica or a restarted process would be.
func (h *harness) newRecommender() *Recommender { return New(h.cfg, h.deps) }

// withDeps changes the harness's collaborators and replaces its Recommender
// with one that uses them. Call it before the first loop.
func (h *harness) withDeps(change func(*Deps)) {
	change(&h.deps)
	h.rec = h.newRecommender()
}

func (h *harness) defaultDeps() Deps {
	return Deps{
		Prom:        metrics.New(nil),
		VPAs:        vpacache.NewLister(h.vpas),
		Pods:        input.NewPodLister(h.pods),
		Resolver:    fakeResolver{},
		Metrics:     usageFunc(h.usage),
		OOMs:        func() []input.OOM { o := h.ooms; h.ooms = nil; return o },
		Checkpoints: checkpoint.NewStore(h.client.AutoscalingV1()),
		Status:      typedStatusWriter{Client: h.client.AutoscalingV1()},
		Estimator:   estimator.NewPercentile(estimator.DefaultConfig()),
		Clock:       h.clk,
		LimitRanges: func(ns string) limitrange.Merged { return h.limitRanges[ns] },
		Controllers: fakeResolver{},
		HPAs: func(ns string) ([]*autoscalingv2.HorizontalPodAutoscaler, bool) {
			return h.hpas[ns], !h.hpasUnknown
		},
	}
}

func (h *harness) usage(keep func(types.NamespacedName) bool) ([]input.ContainerUsage, error) {
	h.keep = keep
	if h.metricErr != nil {
		return nil, h.metricErr
	}
	var out []input.ContainerUsage
	for _, o := range h.pods.List() {
		p := o.(*input.Pod)
		names := append([]string(nil), p.InitContainers...)
		for _, c := range p.Containers {
			names = append(names, c.Name)
		}
		for _, c := range names {
			out = append(out, input.ContainerUsage{
				Pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, Container: c,
				Time: h.clk.Now(), CPU: model.ResourceAmount(h.cpu[p.Name]), Memory: model.ResourceAmount(h.mem[p.Name]),
			})
		}
	}
	return out, nil
}

type vpaOpt func(*vpav1.VerticalPodAutoscaler)

func withRecommender(name string) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) {
		v.Spec.Recommenders = []*vpav1.VerticalPodAutoscalerRecommenderSelector{{Name: name}}
	}
}

func (h *harness) addVPA(ns, name, deployment string, opts ...vpaOpt) {
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(h.clk.Now())},
		Spec: vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{
			APIVersion: "apps/v1", Kind: "Deployment", Name: deployment}},
	}
	for _, o := range opts {
		o(v)
	}
	if _, err := h.client.AutoscalingV1().VerticalPodAutoscalers(ns).Create(context.Background(), v, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.sync()
}

func (h *harness) deleteVPA(ns, name string) {
	if err := h.client.AutoscalingV1().VerticalPodAutoscalers(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.sync()
}

// addWorkloads adds n VPAs web0…web<n-1> in namespace ns, each with one
// pod of one container "app" (300m, 200Mi), and returns their names.
func (h *harness) addWorkloads(n int) []string {
	names := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("web%d", i)
		h.addVPA("ns", name, name)
		h.addPod("ns", name+"-1", name, 300, 200*mi, "app")
		names[i] = name
	}
	return names
}

// addPod adds a running pod of deployment app with the given containers.
func (h *harness) addPod(ns, name, app string, cpuMilli, memBytes int64, containers ...string) {
	h.addPodWith(ns, name, app, cpuMilli, memBytes, nil, containers...)
}

// addPodWith is addPod with a change to the pod before it is cached.
func (h *harness) addPodWith(ns, name, app string, cpuMilli, memBytes int64, mutate func(*corev1.Pod), containers ...string) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}}})
	}
	if mutate != nil {
		mutate(p)
	}
	h.cpu[name], h.mem[name] = cpuMilli, memBytes
	trimmed, err := input.TrimPod(p) // as the pod informer caches it
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.pods.Add(trimmed); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) deletePod(ns, name string) {
	obj, ok, _ := h.pods.GetByKey(ns + "/" + name)
	if ok {
		_ = h.pods.Delete(obj)
	}
}

// sync copies the fake API's VPAs into the lister, as an informer would.
func (h *harness) sync() {
	l, err := h.client.AutoscalingV1().VerticalPodAutoscalers("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	objs := make([]any, 0, len(l.Items))
	for i := range l.Items {
		objs = append(objs, vpacache.New(&l.Items[i]))
	}
	if err := h.vpas.Replace(objs, ""); err != nil {
		h.t.Fatal(err)
	}
}

// loop advances the clock by one interval (except before the first loop),
// runs one loop, waits for its background checkpoint writes and syncs the
// lister.
func (h *harness) loop() {
	h.rec.RunOnce(context.Background())
	h.rec.WaitWrites()
	h.sync()
	h.clk.Step(h.cfg.Interval)
}

func (h *harness) loops(n int) {
	for range n {
		h.loop()
	}
}

func (h *harness) vpa(ns, name string) *vpav1.VerticalPodAutoscaler {
	v, err := h.client.AutoscalingV1().VerticalPodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

func (h *harness) condition(v *vpav1.VerticalPodAutoscaler, t vpav1.VerticalPodAutoscalerConditionType) *vpav1.VerticalPodAutoscalerCondition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == t {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

// count returns the number of actions with the verb on the resource
// (subresource "status" counts as resource "verticalpodautoscalers/status").
func (h *harness) count(verb, res string) int {
	n := 0
	for _, a := range h.client.Actions() {
		r := a.GetResource().Resource
		if a.GetSubresource() != "" {
			r += "/" + a.GetSubresource()
		}
		if a.GetVerb() == verb && r == res {
			n++
		}
	}
	return n
}

func (h *harness) checkpoints() []vpav1.VerticalPodAutoscalerCheckpoint {
	l, err := h.client.AutoscalingV1().VerticalPodAutoscalerCheckpoints("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

var _ = k8stesting.Action(nil)
var _ = namespaces.Options{}

func podID(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// typedStatusWriter writes a status as status.APIWriter does, through the
// typed client, which the fake clientset records.
type typedStatusWriter struct {
	Client vpaclient.AutoscalingV1Interface
}

func (w typedStatusWriter) WriteStatus(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler, status vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error) {
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": status}})
	if err != nil {
		return nil, err
	}
	return w.Client.VerticalPodAutoscalers(vpa.Namespace).Patch(ctx, vpa.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: checkpoint.FieldManager}, "status")
}
