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

// Package quota says how much of a namespace's ResourceQuotas is left for
// pods, so that what OpenVPA gives a pod never makes quota admission refuse
// it where its own requests would have passed.
//
// The three components share it: the admission controller and the updater
// cap the increase they apply (pkg/recommendation's quota fit), the updater
// does not evict a pod whose replacement the quota would refuse, and the
// recommender says so in the ResourceQuotaConflict condition.
package quota

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/target"
)

// Resync is the ResourceQuota informer's resync period.
const Resync = 10 * time.Minute

// Unlimited is the room of a resource no quota tracks.
const Unlimited = math.MaxInt64

// Room is what a namespace's ResourceQuotas leave for pods, per resource:
// the least, over the quotas that apply to every pod OpenVPA patches, of
// hard minus used. A resource no such quota tracks is Unlimited.
//
// The quotas read are those without scopes, or scoped NotBestEffort only
// (a pod OpenVPA gives requests is never BestEffort; one that had none
// counts as asking nothing). Other scopes (Terminating, NotTerminating,
// BestEffort, PriorityClass, cross-namespace affinity) depend on what
// OpenVPA does not change or read; such quotas are not read.
type Room struct {
	// Requests are what is left of requests.cpu (or cpu) and
	// requests.memory (or memory), in millicores and bytes; Limits of
	// limits.cpu and limits.memory.
	Requests, Limits nodefit.Amounts
	// By names, per quota resource name (requests.cpu, limits.memory, ...),
	// the quota that leaves the least.
	By map[corev1.ResourceName]string
}

// Tracked reports whether any quota tracks a resource.
func (r *Room) Tracked() bool {
	return r.Requests.CPU != Unlimited || r.Requests.Memory != Unlimited || r.Limits.CPU != Unlimited || r.Limits.Memory != Unlimited
}

// Names lists the quotas that leave the least, sorted, without repeats.
func (r *Room) Names() string {
	seen := map[string]bool{}
	var names []string
	for _, n := range r.By {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Totals are what quota admission charges a pod: its requests and limits
// (limitrange.PodRequests and PodLimits: containers, sidecars, init
// containers where they need more, pod-level resources) plus its overhead.
type Totals struct {
	Requests, Limits nodefit.Amounts
}

// TotalsOf returns the pod's Totals.
func TotalsOf(pod *corev1.Pod) Totals {
	overhead := nodefit.AmountsOf(pod.Spec.Overhead)
	return Totals{
		Requests: nodefit.AmountsOf(limitrange.PodRequests(pod)).Add(overhead),
		Limits:   nodefit.AmountsOf(limitrange.PodLimits(pod)).Add(overhead),
	}
}

// Within reports whether t is at most limit in every resource.
func (t Totals) Within(limit Totals) bool {
	return limit.Requests.Covers(t.Requests) && limit.Limits.Covers(t.Limits)
}

// Sub returns t - o.
func (t Totals) Sub(o Totals) Totals {
	return Totals{Requests: t.Requests.Sub(o.Requests), Limits: t.Limits.Sub(o.Limits)}
}

// Left returns the room as Totals.
func (r *Room) Left() Totals { return Totals{Requests: r.Requests, Limits: r.Limits} }

// RoomOf computes the Room the quotas leave; nil when none of them applies
// to every pod or tracks cpu or memory.
func RoomOf(quotas []*corev1.ResourceQuota) *Room {
	r := &Room{
		Requests: nodefit.Amounts{CPU: Unlimited, Memory: Unlimited},
		Limits:   nodefit.Amounts{CPU: Unlimited, Memory: Unlimited},
		By:       map[corev1.ResourceName]string{},
	}
	for _, q := range quotas {
		if !appliesToPatchedPods(q) {
			continue
		}
		for name, hard := range q.Spec.Hard {
			slot, canonical := slotOf(r, name)
			if slot == nil {
				continue
			}
			used := q.Status.Used[name]
			var left int64
			if canonical == corev1.ResourceRequestsCPU || canonical == corev1.ResourceLimitsCPU {
				left = hard.MilliValue() - used.MilliValue()
			} else {
				left = hard.Value() - used.Value()
			}
			left = max(left, 0)
			if left < *slot {
				*slot = left
				r.By[canonical] = q.Name
			}
		}
	}
	if !r.Tracked() {
		return nil
	}
	return r
}

// slotOf returns the field of r a quota resource name counts against, and
// its canonical name; nil for names other than cpu and memory requests and
// limits.
func slotOf(r *Room, name corev1.ResourceName) (*int64, corev1.ResourceName) {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceRequestsCPU:
		return &r.Requests.CPU, corev1.ResourceRequestsCPU
	case corev1.ResourceMemory, corev1.ResourceRequestsMemory:
		return &r.Requests.Memory, corev1.ResourceRequestsMemory
	case corev1.ResourceLimitsCPU:
		return &r.Limits.CPU, corev1.ResourceLimitsCPU
	case corev1.ResourceLimitsMemory:
		return &r.Limits.Memory, corev1.ResourceLimitsMemory
	}
	return nil, ""
}

// appliesToPatchedPods reports whether the quota counts every pod OpenVPA
// gives requests: no scopes, or NotBestEffort alone.
func appliesToPatchedPods(q *corev1.ResourceQuota) bool {
	if q.Spec.ScopeSelector != nil && len(q.Spec.ScopeSelector.MatchExpressions) > 0 {
		return false
	}
	for _, s := range q.Spec.Scopes {
		if s != corev1.ResourceQuotaScopeNotBestEffort {
			return false
		}
	}
	return true
}

// Cache is a trimmed informer of the ResourceQuotas. It is kept out of a
// component's informers.Set on purpose, as pkg/hpa's: with RBAC that does
// not grant ResourceQuotas (upstream's does not) a component still starts
// and becomes ready, and no quota is read until the cache has synced.
type Cache struct {
	set      *informers.Set
	informer informers.Informer
}

// NewCache builds the cache of the ResourceQuotas in namespace ("" for
// all) over a core/v1 client.
func NewCache(core rest.Interface, namespace string) *Cache {
	set := &informers.Set{}
	inf := set.Add(core, "resourcequotas", namespace, &corev1.ResourceQuota{}, Resync, nil, Trim)
	return &Cache{set: set, informer: inf}
}

// Start runs the informer until ctx ends.
func (c *Cache) Start(ctx context.Context) { c.set.Start(ctx) }

// HasSynced reports whether the first list has arrived.
func (c *Cache) HasSynced() bool { return c.informer.HasSynced() }

// Room returns what the quotas of a namespace leave, nil when none applies
// or the cache has not synced (or c is nil).
func (c *Cache) Room(namespace string) *Room {
	r, _ := c.Lookup(namespace)
	return r
}

// Lookup is Room, and whether the cache has synced: before it has, no quota
// is known and ok is false.
func (c *Cache) Lookup(namespace string) (room *Room, ok bool) {
	if c == nil || !c.informer.HasSynced() {
		return nil, false
	}
	objs, err := c.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil || len(objs) == 0 {
		return nil, true
	}
	quotas := make([]*corev1.ResourceQuota, 0, len(objs))
	for _, o := range objs {
		if q, ok := o.(*corev1.ResourceQuota); ok {
			quotas = append(quotas, q)
		}
	}
	return RoomOf(quotas), true
}

// tracked are the quota resource names Room reads.
var tracked = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// Trim is the quota informer's transform: it keeps the identity, the
// scopes and the hard and used amounts of cpu and memory. Anything else
// passes through with its managed fields dropped.
func Trim(obj any) (any, error) {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return target.StripManagedFields(obj)
	}
	out := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: q.Name, Namespace: q.Namespace, UID: q.UID, ResourceVersion: q.ResourceVersion},
		Spec:       corev1.ResourceQuotaSpec{Scopes: q.Spec.Scopes, ScopeSelector: q.Spec.ScopeSelector},
	}
	keep := func(l corev1.ResourceList) corev1.ResourceList {
		var kept corev1.ResourceList
		for _, name := range tracked {
			if v, ok := l[name]; ok {
				if kept == nil {
					kept = corev1.ResourceList{}
				}
				kept[name] = v
			}
		}
		return kept
	}
	out.Spec.Hard = keep(q.Spec.Hard)
	out.Status.Used = keep(q.Status.Used)
	return out, nil
}
