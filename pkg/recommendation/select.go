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

package recommendation

import (
	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/limitrange"
)

// selectTargets is the first stage: it picks, per pod container, the
// recommendation to cap and keeps of it the resources the VPA's policy
// controls. Containers in scaling mode Off get none; under a Pod LimitRange,
// a container the recommendation does not name starts from its requests.
// The recommendation is not modified: what a later stage may change is a
// copy, or (opts.shared) copied on its first change.
func selectTargets(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, lr limitrange.Merged, opts capOptions) working {
	n := len(pod.Spec.Containers)
	w := working{
		pod:      pod,
		policy:   policy,
		lr:       lr,
		bounds:   allBounds,
		recs:     make([]*vpav1.RecommendedContainerResources, n),
		inserted: make([]bool, n),
		fit:      opts.fit,
	}
	if opts.targetOnly {
		w.bounds = targetBound
	}
	var copies []vpav1.RecommendedContainerResources
	if opts.targetOnly || lr.Pod != nil {
		copies = make([]vpav1.RecommendedContainerResources, n)
	}
	if opts.shared {
		w.shared = make([]bool, n)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cp := vpav1.GetContainerResourcePolicy(c.Name, policy)
		if cp.ScalingMode() == vpav1.ContainerScalingModeOff {
			continue
		}
		r := find(rec, c.Name)
		var target resourceList
		switch {
		case r == nil && lr.Pod != nil && len(c.Resources.Requests) > 0:
			// Upstream's rule: under a Pod LimitRange, a container the
			// recommendation does not cover is scaled with the others,
			// starting from its requests. Its bounds (when capped) start
			// from its requests too, so that they scale like the target.
			target = resourceList{m: c.Resources.Requests, shared: true}
			copies[i] = vpav1.RecommendedContainerResources{ContainerName: c.Name}
			r = &copies[i]
			if !opts.targetOnly {
				r.LowerBound = withoutYielded(controlled(c.Resources.Requests.DeepCopy(), cp), c.Name, opts.fit.Yield)
				r.UpperBound = withoutYielded(controlled(c.Resources.Requests.DeepCopy(), cp), c.Name, opts.fit.Yield)
			}
			w.inserted[i] = true
		case r == nil:
			continue
		case opts.targetOnly:
			target = resourceList{m: r.Target, shared: true}
			copies[i] = vpav1.RecommendedContainerResources{ContainerName: r.ContainerName}
			r = &copies[i]
		default:
			r = r.DeepCopy()
			target = resourceList{m: r.Target}
			r.LowerBound = withoutYielded(controlled(r.LowerBound, cp), c.Name, opts.fit.Yield)
			r.UpperBound = withoutYielded(controlled(r.UpperBound, cp), c.Name, opts.fit.Yield)
		}
		if target.shared && !opts.shared {
			target.own()
		}
		target.keepControlled(cp)
		target.dropYielded(c.Name, opts.fit.Yield)
		r.Target = target.m
		if opts.shared {
			w.shared[i] = target.shared
		}
		w.recs[i] = r
	}
	return w
}

func find(rec *vpav1.RecommendedPodResources, name string) *vpav1.RecommendedContainerResources {
	for i := range rec.ContainerRecommendations {
		if rec.ContainerRecommendations[i].ContainerName == name {
			return &rec.ContainerRecommendations[i]
		}
	}
	return nil
}

// keepControlled drops the resources the policy does not control.
func (l *resourceList) keepControlled(cp *vpav1.ContainerResourcePolicy) {
	for name := range l.m {
		if !cp.Controls(name) {
			l.own()
			break
		}
	}
	if l.shared {
		return
	}
	l.m = controlled(l.m, cp)
}

// controlled drops the resources the policy does not control.
func controlled(l corev1.ResourceList, cp *vpav1.ContainerResourcePolicy) corev1.ResourceList {
	if l == nil {
		return nil
	}
	for name := range l {
		if !cp.Controls(name) {
			delete(l, name)
		}
	}
	return l
}

// dropYielded drops the resources of container that are left to an HPA
// (hpa.Yielded), copying a shared list first.
func (l *resourceList) dropYielded(container string, yields []hpa.Conflict) {
	if len(yields) == 0 {
		return
	}
	for name := range l.m {
		if hpa.Yielded(yields, container, name) {
			l.own()
			delete(l.m, name)
		}
	}
}

// withoutYielded drops, from a list of its own, the resources of container
// that are left to an HPA.
func withoutYielded(l corev1.ResourceList, container string, yields []hpa.Conflict) corev1.ResourceList {
	for name := range l {
		if hpa.Yielded(yields, container, name) {
			delete(l, name)
		}
	}
	return l
}
