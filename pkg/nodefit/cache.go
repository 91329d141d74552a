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
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/target"
)

// Resync is the period of the node and DaemonSet pod informers.
const Resync = 30 * time.Minute

// DaemonPodLabel is the label the DaemonSet controller puts on every pod it
// creates (the template generation): the DaemonSet pod informer lists only
// the pods that carry it, then keeps those whose controller is a DaemonSet.
const DaemonPodLabel = "pod-template-generation"

// maxMemo bounds the computed rooms kept between node changes; past it the
// memo starts again.
const maxMemo = 4096

// Cache keeps the nodes (trimmed to labels, taints, the unschedulable mark
// and allocatable cpu and memory) and the DaemonSet pods bound to them
// (trimmed to their node, their DaemonSet and their requests), and answers,
// per distinct set of scheduling constraints, which nodes a pod may use and
// how much room each leaves (Rooms). The answer is computed once per
// constraints until a node or a DaemonSet pod changes, so a loop over
// thousands of pods of a few templates costs a few computations. It is safe
// for concurrent use.
type Cache struct {
	set     *informers.Set
	nodes   informers.Informer
	daemons informers.Informer

	// gen counts the changes of nodes and DaemonSet pods seen.
	gen atomic.Uint64

	mu sync.Mutex
	// memoGen is the gen memo and daemonUse were computed at.
	memoGen uint64
	memo    map[memoKey][]Room
	// daemonUse is, per node, the requests of each DaemonSet's pods on it.
	daemonUse map[string][]daemonPods
}

type memoKey struct{ constraints, exclude string }

// daemonPods are the requests of one DaemonSet's pods on a node.
type daemonPods struct {
	owner    string // namespace/name
	requests Amounts
}

// NewCache builds the cache over a core/v1 client. It lists and watches
// the nodes and the pods in every namespace that carry DaemonPodLabel and
// are neither Succeeded nor Failed.
func NewCache(core rest.Interface) (*Cache, error) {
	set := &informers.Set{}
	nodes := set.Add(core, "nodes", "", &corev1.Node{}, Resync, nil, TrimNode)
	daemons := set.Add(core, "pods", "", &corev1.Pod{}, Resync, func(o *metav1.ListOptions) {
		req, _ := labels.NewRequirement(DaemonPodLabel, selection.Exists, nil) // a valid key: cannot fail
		o.LabelSelector = labels.NewSelector().Add(*req).String()
		o.FieldSelector = fields.AndSelectors(
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
		).String()
	}, TrimDaemonPod)
	return newCache(set, nodes, daemons)
}

// newCache builds a Cache over its two informers (trimmed by TrimNode and
// TrimDaemonPod), started and waited for through set.
func newCache(set *informers.Set, nodes, daemons informers.Informer) (*Cache, error) {
	c := &Cache{set: set, nodes: nodes, daemons: daemons}
	for _, inf := range []informers.Informer{c.nodes, c.daemons} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.gen.Add(1) },
			DeleteFunc: func(any) { c.gen.Add(1) },
			UpdateFunc: func(old, cur any) {
				if changed(old, cur) {
					c.gen.Add(1)
				}
			},
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Start runs the informers until ctx ends.
func (c *Cache) Start(ctx context.Context) { c.set.Start(ctx) }

// WaitForSync blocks until both informers have synced, or ctx ends.
func (c *Cache) WaitForSync(ctx context.Context) error { return c.set.WaitForSync(ctx) }

// HasSynced reports whether both informers have listed.
func (c *Cache) HasSynced() bool { return c.nodes.HasSynced() && c.daemons.HasSynced() }

// Rooms returns the nodes a pod with these constraints may be scheduled on,
// with the room the DaemonSet pods on each leave (those of the DaemonSet
// exclude, "namespace/name", are not counted: the pod's own DaemonSet), as
// Frontier reduces them. ok is false until the cache has synced; the list
// is empty when no node allows the pod. The result is shared: it must not
// be modified.
func (c *Cache) Rooms(cons Constraints, exclude string) (rooms []Room, ok bool) {
	return c.rooms(cons.Key(), &cons, exclude)
}

// RoomsByKey is Rooms for the constraints a Key was made from; they are
// parsed only when their rooms are not known. A key that does not parse
// allows every node.
func (c *Cache) RoomsByKey(key, exclude string) (rooms []Room, ok bool) {
	return c.rooms(key, nil, exclude)
}

func (c *Cache) rooms(key string, cons *Constraints, exclude string) ([]Room, bool) {
	if c == nil || !c.HasSynced() {
		return nil, false
	}
	mk := memoKey{constraints: key, exclude: exclude}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen := c.gen.Load(); gen != c.memoGen || c.memo == nil || len(c.memo) >= maxMemo {
		c.memoGen = gen
		c.memo = map[memoKey][]Room{}
		c.daemonUse = daemonUseOf(c.daemons.GetIndexer().List())
	}
	if r, found := c.memo[mk]; found {
		return r, true
	}
	if cons == nil {
		parsed, _ := ParseKey(key)
		cons = &parsed
	}
	rooms := roomsOf(c.nodes.GetIndexer().List(), c.daemonUse, *cons, exclude)
	c.memo[mk] = rooms
	return rooms, true
}

// roomsOf computes Rooms over cached nodes (other objects are skipped) and
// the DaemonSet pods' requests per node.
func roomsOf(nodes []any, use map[string][]daemonPods, cons Constraints, exclude string) []Room {
	rooms := []Room{}
	for _, o := range nodes {
		n, ok := o.(*corev1.Node)
		if !ok || !cons.Allows(n) {
			continue
		}
		alloc := AmountsOf(n.Status.Allocatable)
		free := alloc
		for _, d := range use[n.Name] {
			if d.owner != exclude {
				free = free.Sub(d.requests)
			}
		}
		rooms = append(rooms, Room{Node: n.Name, Allocatable: alloc, Free: free})
	}
	return Frontier(rooms)
}

// daemonUseOf sums the requests of the cached DaemonSet pods per node and
// DaemonSet.
func daemonUseOf(pods []any) map[string][]daemonPods {
	out := map[string][]daemonPods{}
	for _, o := range pods {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			continue
		}
		owner := DaemonSetOf(p)
		if owner == "" {
			continue
		}
		var req Amounts
		for i := range p.Spec.Containers {
			req = req.Add(AmountsOf(p.Spec.Containers[i].Resources.Requests))
		}
		out[p.Spec.NodeName] = append(out[p.Spec.NodeName], daemonPods{owner: owner, requests: req})
	}
	return out
}

// DaemonSetOf returns "namespace/name" of the DaemonSet that controls the
// pod, "" when none does.
func DaemonSetOf(pod *corev1.Pod) string {
	ref := target.ControllerOf(pod.Namespace, pod.OwnerReferences)
	if ref == nil || ref.Kind != target.KindDaemonSet || ref.Group() != "apps" {
		return ""
	}
	return ref.Namespace + "/" + ref.Name
}

// TrimNode is the node informer's transform: it keeps the name, labels,
// the NoSchedule and NoExecute taints, the unschedulable mark and the
// allocatable cpu and memory. Anything else passes through with its
// managed fields dropped.
func TrimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return target.StripManagedFields(obj)
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels},
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out.Spec.Taints = append(out.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	alloc := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := n.Status.Allocatable[name]; ok {
			alloc[name] = q
		}
	}
	out.Status.Allocatable = alloc
	return out, nil
}

// TrimDaemonPod is the DaemonSet pod informer's transform: it keeps the
// identity, the controlling DaemonSet, the node and, as one container, the
// pod's requests as the scheduler counts them (limitrange.PodRequests and
// the overhead). A pod no DaemonSet controls keeps only its identity.
// Anything else passes through with its managed fields dropped.
func TrimDaemonPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return target.StripManagedFields(obj)
	}
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion}}
	if DaemonSetOf(p) == "" {
		return out, nil
	}
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			out.OwnerReferences = []metav1.OwnerReference{o}
		}
	}
	out.Spec.NodeName = p.Spec.NodeName
	req := PodAmounts(p)
	out.Spec.Containers = []corev1.Container{{Name: "requests", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: *CPUQuantity(req.CPU), corev1.ResourceMemory: *MemoryQuantity(req.Memory),
	}}}}
	return out, nil
}

// PodAmounts is what the scheduler counts of a pod on its node: its cpu and
// memory requests (limitrange.PodRequests: containers and sidecars, init
// containers where they need more, pod-level requests) plus its overhead.
func PodAmounts(p *corev1.Pod) Amounts {
	return AmountsOf(limitrange.PodRequests(p)).Add(AmountsOf(p.Spec.Overhead))
}

// changed reports whether an update changes what Rooms reads: trimmed
// objects without their resourceVersion.
func changed(old, cur any) bool {
	switch o := old.(type) {
	case *corev1.Node:
		c, ok := cur.(*corev1.Node)
		return !ok || !reflect.DeepEqual(withoutVersion(o.ObjectMeta), withoutVersion(c.ObjectMeta)) ||
			!reflect.DeepEqual(o.Spec, c.Spec) || !reflect.DeepEqual(AmountsOf(o.Status.Allocatable), AmountsOf(c.Status.Allocatable))
	case *corev1.Pod:
		c, ok := cur.(*corev1.Pod)
		return !ok || o.Spec.NodeName != c.Spec.NodeName || DaemonSetOf(o) != DaemonSetOf(c) || PodAmounts(o) != PodAmounts(c)
	}
	return true
}

func withoutVersion(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ResourceVersion = ""
	return m
}
