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

package nodefit

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/pkg/informers"
)

// fakeInformer is an informer whose objects the test adds, updates and
// deletes, calling the handlers as a real one does.
type fakeInformer struct {
	store    cache.Indexer
	handlers []cache.ResourceEventHandler
	synced   bool
	trim     func(any) (any, error)
}

func newFake(trim func(any) (any, error)) *fakeInformer {
	return &fakeInformer{store: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}), synced: true, trim: trim}
}

func (f *fakeInformer) GetIndexer() cache.Indexer        { return f.store }
func (f *fakeInformer) AddIndexers(cache.Indexers) error { return nil }
func (f *fakeInformer) HasSynced() bool                  { return f.synced }
func (f *fakeInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	f.handlers = append(f.handlers, h)
	return nil, nil
}

func (f *fakeInformer) apply(t *testing.T, obj any) {
	t.Helper()
	o, err := f.trim(obj)
	if err != nil {
		t.Fatal(err)
	}
	old, exists, _ := f.store.Get(o)
	if err := f.store.Update(o); err != nil {
		t.Fatal(err)
	}
	for _, h := range f.handlers {
		if exists {
			h.OnUpdate(old, o)
		} else {
			h.OnAdd(o, false)
		}
	}
}

func (f *fakeInformer) remove(t *testing.T, obj any) {
	t.Helper()
	o, _ := f.trim(obj)
	if err := f.store.Delete(o); err != nil {
		t.Fatal(err)
	}
	for _, h := range f.handlers {
		h.OnDelete(o)
	}
}

func fullNode(name string, cpu, memory string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, ResourceVersion: "1"},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
				corev1.ResourcePods: resource.MustParse("110")},
			Images: []corev1.ContainerImage{{Names: []string{"big-image"}}},
		},
	}
}

func daemonPod(ns, name, ds, node, cpu, memory string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{DaemonPodLabel: "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}}},
		}},
	}
}

func testCache(t *testing.T) (*Cache, *fakeInformer, *fakeInformer) {
	t.Helper()
	nodes, daemons := newFake(TrimNode), newFake(TrimDaemonPod)
	c, err := newCache(&informers.Set{}, nodes, daemons)
	if err != nil {
		t.Fatal(err)
	}
	return c, nodes, daemons
}

func names(rooms []Room) []string {
	var out []string
	for _, r := range rooms {
		out = append(out, r.Node)
	}
	return out
}

func TestCacheRooms(t *testing.T) {
	c, nodes, daemons := testCache(t)
	nodes.apply(t, fullNode("a", "4", "16Gi", map[string]string{"pool": "general"}))
	nodes.apply(t, fullNode("b", "8", "8Gi", map[string]string{"pool": "general"}))
	nodes.apply(t, fullNode("gpu", "64", "256Gi", map[string]string{"pool": "gpu"},
		corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}))
	daemons.apply(t, daemonPod("kube-system", "log-a", "logs", "a", "500m", "1Gi"))
	daemons.apply(t, daemonPod("kube-system", "log-b", "logs", "b", "500m", "1Gi"))
	daemons.apply(t, daemonPod("kube-system", "mon-a", "monitoring", "a", "250m", "512Mi"))

	rooms, ok := c.Rooms(Constraints{}, "")
	if !ok {
		t.Fatal("not synced")
	}
	want := []Room{
		{Node: "b", Allocatable: Amounts{CPU: 8000, Memory: 8 * gi}, Free: Amounts{CPU: 7500, Memory: 7 * gi}},
		{Node: "a", Allocatable: Amounts{CPU: 4000, Memory: 16 * gi}, Free: Amounts{CPU: 3250, Memory: 16*gi - gi - gi/2}},
	}
	if !reflect.DeepEqual(rooms, want) {
		t.Errorf("Rooms = %+v, want %+v", rooms, want)
	}

	// The pod of the logs DaemonSet does not count its own DaemonSet.
	own, _ := c.Rooms(Constraints{}, "kube-system/logs")
	if own[0].Free != (Amounts{CPU: 8000, Memory: 8 * gi}) {
		t.Errorf("excluding the own DaemonSet: %+v", own)
	}

	tolerating := Constraints{Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}}
	if got := names(must(c.Rooms(tolerating, ""))); !reflect.DeepEqual(got, []string{"gpu"}) {
		t.Errorf("tolerating the gpu taint: %v", got)
	}
	if got := must(c.Rooms(Constraints{NodeSelector: map[string]string{"pool": "none"}}, "")); len(got) != 0 {
		t.Errorf("no node allowed: %v", got)
	}

	// A larger node added is seen at the next question.
	nodes.apply(t, fullNode("c", "16", "32Gi", map[string]string{"pool": "general"}))
	if got := names(must(c.Rooms(Constraints{}, ""))); !reflect.DeepEqual(got, []string{"c"}) {
		t.Errorf("after adding c: %v", got)
	}
	// So is its removal, and a DaemonSet pod gone.
	nodes.remove(t, fullNode("c", "16", "32Gi", nil))
	daemons.remove(t, daemonPod("kube-system", "log-b", "logs", "b", "500m", "1Gi"))
	if got := must(c.Rooms(Constraints{}, "")); got[0].Node != "b" || got[0].Free.CPU != 8000 {
		t.Errorf("after removing c and log-b: %+v", got)
	}
}

func must(r []Room, ok bool) []Room {
	if !ok {
		panic("not synced")
	}
	return r
}

func TestCacheNotSynced(t *testing.T) {
	c, nodes, _ := testCache(t)
	nodes.synced = false
	if _, ok := c.Rooms(Constraints{}, ""); ok {
		t.Error("Rooms answered before the nodes synced")
	}
	var none *Cache
	if _, ok := none.Rooms(Constraints{}, ""); ok {
		t.Error("a nil cache answered")
	}
}

// TestCacheRecomputesOnlyOnChange checks that a heartbeat-like update (a
// new resourceVersion, nothing node fit reads changed) keeps the computed
// rooms, and a change of allocatable does not.
func TestCacheRecomputesOnlyOnChange(t *testing.T) {
	c, nodes, _ := testCache(t)
	nodes.apply(t, fullNode("a", "4", "16Gi", nil))
	first := must(c.Rooms(Constraints{}, ""))
	gen := c.gen.Load()
	n := fullNode("a", "4", "16Gi", nil)
	n.ResourceVersion = "2"
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	nodes.apply(t, n)
	if c.gen.Load() != gen {
		t.Error("an update that changes nothing node fit reads counted as a change")
	}
	if again := must(c.Rooms(Constraints{}, "")); &again[0] != &first[0] {
		t.Error("rooms computed again without a change")
	}
	nodes.apply(t, fullNode("a", "6", "16Gi", nil))
	if got := must(c.Rooms(Constraints{}, "")); got[0].Free.CPU != 6000 {
		t.Errorf("after allocatable changed: %+v", got)
	}
}

func TestTrimDaemonPod(t *testing.T) {
	p := daemonPod("ns", "p", "ds", "n1", "300m", "200Mi")
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	o, err := TrimDaemonPod(p)
	if err != nil {
		t.Fatal(err)
	}
	got := o.(*corev1.Pod)
	if DaemonSetOf(got) != "ns/ds" || got.Spec.NodeName != "n1" || PodAmounts(got) != (Amounts{CPU: 400, Memory: 200 << 20}) {
		t.Errorf("trimmed: owner %q node %q requests %+v", DaemonSetOf(got), got.Spec.NodeName, PodAmounts(got))
	}
	// A pod some other controller owns keeps nothing node fit reads.
	p.OwnerReferences[0].Kind = "StatefulSet"
	o, _ = TrimDaemonPod(p)
	if got := o.(*corev1.Pod); got.Spec.NodeName != "" || len(got.Spec.Containers) != 0 {
		t.Errorf("a StatefulSet's pod kept %+v", got.Spec)
	}
}

func TestTrimNode(t *testing.T) {
	n := fullNode("n", "4", "8Gi", map[string]string{"a": "1"},
		corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}, corev1.Taint{Key: "y", Value: "v", Effect: corev1.TaintEffectNoExecute})
	o, err := TrimNode(n)
	if err != nil {
		t.Fatal(err)
	}
	got := o.(*corev1.Node)
	if len(got.Status.Images) != 0 || len(got.Status.Allocatable) != 2 || len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Key != "y" || got.Labels["a"] != "1" {
		t.Errorf("trimmed node: %+v", got)
	}
}
