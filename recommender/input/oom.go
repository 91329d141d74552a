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

package input

import (
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openvpa/openvpa/recommender/model"
)

// OOMBufferSize is how many OOM events wait for the loop before new ones are
// dropped, as upstream.
const OOMBufferSize = 5000

// OOM is one out-of-memory kill of a container.
type OOM struct {
	Pod       types.NamespacedName
	Container string
	Time      time.Time
	// Memory is the container's memory request (for a pod status transition)
	// or its usage (for an eviction), in bytes.
	Memory model.ResourceAmount
	// Updated is when OpenVPA last changed the pod's requests (see
	// Pod.Updated); zero when it never did, or for an eviction.
	Updated time.Time
}

// AfterUpdate reports whether the kill came within window of the pod's
// last update by OpenVPA.
func (e *OOM) AfterUpdate(window time.Duration) bool {
	if e.Updated.IsZero() {
		return false
	}
	d := e.Time.Sub(e.Updated)
	return d >= 0 && d <= window
}

// OOMObserver turns pod status transitions and Evicted events into OOMs.
// It holds at most OOMBufferSize of them between two loops, like upstream's
// buffered channel, but allocates only for the OOMs it holds: a channel of
// that size would keep 0.7 MB for what is nearly always empty.
type OOMObserver struct {
	mu      sync.Mutex
	pending []OOM
}

// NewOOMObserver returns an observer holding up to OOMBufferSize OOMs.
func NewOOMObserver() *OOMObserver {
	return &OOMObserver{}
}

func (o *OOMObserver) send(e OOM) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) >= OOMBufferSize {
		return // the loop is far behind; drop, as upstream
	}
	o.pending = append(o.pending, e)
}

// Drain returns the OOMs observed since the last call, oldest first, without
// blocking.
func (o *OOMObserver) Drain() []OOM {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.pending
	o.pending = nil
	return out
}

// OnPodUpdate is the pod informer's update handler.
func (o *OOMObserver) OnPodUpdate(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*Pod)
	newPod, ok2 := newObj.(*Pod)
	if !ok1 || !ok2 {
		return
	}
	for _, e := range PodOOMs(oldPod, newPod) {
		o.send(e)
	}
}

// PodOOMs compares two versions of a pod and returns the OOM kills the second
// one reveals:
//   - a container now terminated with reason OOMKilled that was not
//     terminated before, or whose restart count grew (attributed to the new
//     pod's memory request);
//   - a container running in both whose restart count grew and whose last
//     termination was OOMKilled (the memory request is read from the old pod).
func PodOOMs(oldPod, newPod *Pod) []OOM {
	id := types.NamespacedName{Namespace: newPod.Namespace, Name: newPod.Name}
	var out []OOM
	for i := range newPod.Containers {
		cur := &newPod.Containers[i]
		old := oldPod.container(cur.Name)
		if !cur.HasStatus || old == nil || !old.HasStatus {
			continue
		}
		if t := cur.Terminated; t != nil && t.Reason == "OOMKilled" &&
			(old.Terminated == nil || cur.RestartCount > old.RestartCount) {
			out = append(out, OOM{Pod: id, Container: cur.Name, Time: t.FinishedAt.Time, Memory: cur.Memory, Updated: newPod.Updated.Time})
			continue
		}
		if old.Running && cur.Running && cur.RestartCount > old.RestartCount {
			if t := cur.LastTerminated; t != nil && t.Reason == "OOMKilled" {
				out = append(out, OOM{Pod: id, Container: cur.Name, Time: t.FinishedAt.Time, Memory: old.Memory, Updated: newPod.Updated.Time})
			}
		}
	}
	return out
}

// OnEvent is the Evicted-event informer's add handler.
func (o *OOMObserver) OnEvent(obj any) {
	ev, ok := obj.(*corev1.Event)
	if !ok {
		return
	}
	for _, e := range EvictionOOMs(ev) {
		o.send(e)
	}
}

// EvictionOOMs reads the kubelet's eviction annotations of an Evicted event
// (offending_containers, offending_containers_usage, starved_resource: comma
// lists of equal length) and returns an OOM for each container starved of
// memory, with its usage and the event's creation time.
func EvictionOOMs(ev *corev1.Event) []OOM {
	if ev.Reason != "Evicted" || ev.InvolvedObject.Kind != "Pod" {
		return nil
	}
	split := func(k string) []string {
		v, ok := ev.Annotations[k]
		if !ok {
			return nil
		}
		return strings.Split(v, ",")
	}
	containers := split("offending_containers")
	usages := split("offending_containers_usage")
	starved := split("starved_resource")
	if len(containers) == 0 || len(containers) != len(usages) || len(containers) != len(starved) {
		return nil
	}
	id := types.NamespacedName{Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}
	var out []OOM
	for i, c := range containers {
		if strings.TrimSpace(starved[i]) != string(corev1.ResourceMemory) {
			continue
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(usages[i]))
		if err != nil {
			continue
		}
		out = append(out, OOM{Pod: id, Container: strings.TrimSpace(c), Time: ev.CreationTimestamp.Time, Memory: model.ResourceAmount(q.Value())})
	}
	return out
}
