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
	"encoding/json"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/sidecar"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/model"
)

// Pod is what the recommender caches of a pod: its identity and labels, its
// phase, its init containers' names, and per container the name, the memory
// request an OOM is attributed to and the state the OOM observer compares.
//
// Pods are most of what the recommender caches. A *corev1.Pod costs about
// 2.5 KB even when everything but these fields is dropped (the Pod struct
// alone is 1.2 KB, each container's request map over 600 bytes); a Pod is
// a fifth of that.
type Pod struct {
	metav1.ObjectMeta
	Phase          corev1.PodPhase
	InitContainers []string
	Containers     []Container
	// PodResources are the pod-level resources, nil when the pod sets none.
	PodResources *corev1.ResourceRequirements
	// Controller is the pod's controlling owner, nil when it has none: for
	// the OverlappingVPA condition, which names the VPA the admission
	// controller applies (the one whose targetRef is the pod's topmost
	// controller).
	Controller *target.Ref
	// Updated is when OpenVPA last changed the pod's requests: its creation
	// when the admission controller patched it (vpaUpdates), or the start
	// of the updater's latest in-place resize, whichever is later; zero
	// when neither did. (metav1.Time, which semantic equality compares.)
	Updated metav1.Time
	// Constraints are the pod's scheduling constraints as a nodefit key
	// ("" for none), interned: the pods of one template share one string.
	Constraints string
}

// DaemonSet returns "namespace/name" of the DaemonSet that controls the pod,
// "" when none does: node fit does not count its own DaemonSet's pods.
func (p *Pod) DaemonSet() string {
	if p.Controller == nil || p.Controller.Kind != target.KindDaemonSet || p.Controller.Group() != "apps" {
		return ""
	}
	return p.Controller.Namespace + "/" + p.Controller.Name
}

// workloadConstraints are the scheduling constraints of the pod's workload:
// the pod's own, except that the node a DaemonSet pins each of its pods to
// (a required metadata.name field) is left out, so that all of its pods
// share one key and the recommendation is capped to the largest node the
// DaemonSet runs on, not to whichever node the sample pod is on. (The
// admission controller and the updater cap each pod to its own node.)
func workloadConstraints(p *corev1.Pod) nodefit.Constraints {
	c := nodefit.Of(&p.Spec)
	if c.Required == nil || nodefit.DaemonSetOf(p) == "" {
		return c
	}
	var terms []corev1.NodeSelectorTerm
	for _, t := range c.Required.NodeSelectorTerms {
		if len(t.MatchExpressions) > 0 {
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: t.MatchExpressions})
		}
	}
	c.Required = nil
	if len(terms) > 0 {
		c.Required = &corev1.NodeSelector{NodeSelectorTerms: terms}
	}
	return c
}

// internKey returns key from the process's canonical copies (package
// unique), so that equal keys share their bytes.
func internKey(key string) string {
	if key == "" {
		return ""
	}
	return unique.Make(key).Value()
}

// Container is one container of a Pod's spec with its status.
type Container struct {
	Name string
	// Spec holds the cpu and memory requests and limits of the spec, for
	// checking the recommendation against the namespace's LimitRanges.
	Spec Resources
	// Memory is the memory request an OOM of this container is attributed
	// to: the actuated request from the container status when reported,
	// else the spec's (0 when the spec has none).
	Memory model.ResourceAmount
	// HasStatus is set when the pod status reports the container; the
	// fields below are only meaningful then.
	HasStatus      bool
	Running        bool
	RestartCount   int32
	Terminated     *Termination
	LastTerminated *Termination
}

// Resources are a container's cpu and memory requests and limits, in
// millicores and bytes; -1 where the spec sets none.
type Resources struct {
	CPURequest, CPULimit, MemoryRequest, MemoryLimit int64
}

func resourcesOf(r *corev1.ResourceRequirements) Resources {
	get := func(l corev1.ResourceList, name corev1.ResourceName) int64 {
		q, ok := l[name]
		if !ok {
			return -1
		}
		if name == corev1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	return Resources{
		CPURequest: get(r.Requests, corev1.ResourceCPU), CPULimit: get(r.Limits, corev1.ResourceCPU),
		MemoryRequest: get(r.Requests, corev1.ResourceMemory), MemoryLimit: get(r.Limits, corev1.ResourceMemory),
	}
}

func (r Resources) lists() (requests, limits corev1.ResourceList) {
	set := func(l *corev1.ResourceList, name corev1.ResourceName, v int64) {
		if v < 0 {
			return
		}
		if *l == nil {
			*l = corev1.ResourceList{}
		}
		if name == corev1.ResourceCPU {
			(*l)[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
		} else {
			(*l)[name] = *resource.NewQuantity(v, resource.BinarySI)
		}
	}
	set(&requests, corev1.ResourceCPU, r.CPURequest)
	set(&requests, corev1.ResourceMemory, r.MemoryRequest)
	set(&limits, corev1.ResourceCPU, r.CPULimit)
	set(&limits, corev1.ResourceMemory, r.MemoryLimit)
	return requests, limits
}

// SpecPod returns the pod's containers with their cpu and memory requests
// and limits as a *corev1.Pod, for pkg/recommendation. Init containers are
// left out.
func (p *Pod) SpecPod() *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	out.Spec.Containers = make([]corev1.Container, len(p.Containers))
	for i := range p.Containers {
		c := &out.Spec.Containers[i]
		c.Name = p.Containers[i].Name
		c.Resources.Requests, c.Resources.Limits = p.Containers[i].Spec.lists()
	}
	if p.PodResources != nil {
		out.Spec.Resources = p.PodResources.DeepCopy()
	}
	return out
}

// Termination is why and when a container terminated.
type Termination struct {
	Reason     string
	FinishedAt metav1.Time
}

// TrimPodWithSidecars is TrimPod for the NativeSidecar feature gate: a
// pod's native sidecars become containers of the Pod (sidecar.View), so that
// their usage and OOMs are recorded and they get recommendations.
func TrimPodWithSidecars(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return TrimPod(sidecar.View(p))
	}
	return TrimPod(obj)
}

// TrimPod is the pod informer's transform: it turns a *corev1.Pod into a
// *Pod. Anything else, a Pod included (the transform is idempotent), passes
// through with its managed fields dropped.
func TrimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return target.StripManagedFields(obj)
	}
	out := &Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            p.Name,
			Namespace:       p.Namespace,
			UID:             p.UID,
			ResourceVersion: p.ResourceVersion,
			Labels:          p.Labels,
		},
		Phase:       p.Status.Phase,
		Containers:  make([]Container, len(p.Spec.Containers)),
		Controller:  controllerOf(p),
		Updated:     updatedAt(p),
		Constraints: internKey(workloadConstraints(p).Key()),
	}
	if len(p.Spec.InitContainers) > 0 {
		out.InitContainers = make([]string, len(p.Spec.InitContainers))
		for i := range p.Spec.InitContainers {
			out.InitContainers[i] = p.Spec.InitContainers[i].Name
		}
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		q := c.Resources.Requests[corev1.ResourceMemory]
		out.Containers[i] = Container{Name: c.Name, Memory: model.ResourceAmount(q.Value()), Spec: resourcesOf(&c.Resources)}
	}
	if p.Spec.Resources != nil {
		out.PodResources = p.Spec.Resources.DeepCopy()
	}
	for i := range p.Status.ContainerStatuses {
		s := &p.Status.ContainerStatuses[i]
		c := out.container(s.Name)
		if c == nil {
			continue // not in the spec: nothing to attribute it to
		}
		c.HasStatus = true
		c.Running = s.State.Running != nil
		c.RestartCount = s.RestartCount
		c.Terminated = termination(s.State.Terminated)
		c.LastTerminated = termination(s.LastTerminationState.Terminated)
		if s.Resources != nil {
			if q, ok := s.Resources.Requests[corev1.ResourceMemory]; ok {
				c.Memory = model.ResourceAmount(q.Value())
			}
		}
	}
	return out, nil
}

// commonOwnerStrings are the API versions and kinds of nearly every pod
// owner: a cached pod's Controller refers to these instead of keeping its
// own copies.
var commonOwnerStrings = map[string]string{
	"apps/v1": "apps/v1", "batch/v1": "batch/v1", "v1": "v1",
	target.KindReplicaSet: target.KindReplicaSet, target.KindStatefulSet: target.KindStatefulSet,
	target.KindDaemonSet: target.KindDaemonSet, target.KindJob: target.KindJob,
	target.KindReplicationController: target.KindReplicationController, target.KindNode: target.KindNode,
}

// controllerOf returns the pod's controlling owner with its API version and
// kind shared with every other pod's.
func controllerOf(p *corev1.Pod) *target.Ref {
	ref := target.ControllerOf(p.Namespace, p.OwnerReferences)
	if ref == nil {
		return nil
	}
	if s, ok := commonOwnerStrings[ref.APIVersion]; ok {
		ref.APIVersion = s
	}
	if s, ok := commonOwnerStrings[ref.Kind]; ok {
		ref.Kind = s
	}
	return ref
}

// updatedAt returns Pod.Updated of p.
func updatedAt(p *corev1.Pod) metav1.Time {
	var t metav1.Time
	if _, ok := p.Annotations[annotations.Updates]; ok {
		t = p.CreationTimestamp
	}
	if v, ok := p.Annotations[annotations.InPlaceResize]; ok {
		var rec struct {
			Started metav1.Time `json:"started"`
		}
		if json.Unmarshal([]byte(v), &rec) == nil && rec.Started.After(t.Time) {
			t = rec.Started
		}
	}
	return t
}

func termination(t *corev1.ContainerStateTerminated) *Termination {
	if t == nil {
		return nil
	}
	return &Termination{Reason: t.Reason, FinishedAt: t.FinishedAt}
}

// container returns the named container, nil if the pod has none.
func (p *Pod) container(name string) *Container {
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	return nil
}

// PodLister lists the cached pods.
type PodLister interface {
	List() ([]*Pod, error)
}

// NewPodLister returns a PodLister over an indexer of *Pod (other objects
// are skipped).
func NewPodLister(indexer cache.Indexer) PodLister { return podLister{indexer} }

type podLister struct{ indexer cache.Indexer }

func (l podLister) List() ([]*Pod, error) {
	objs := l.indexer.List()
	out := make([]*Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*Pod); ok {
			out = append(out, p)
		}
	}
	return out, nil
}
