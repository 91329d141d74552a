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

// Package limitrange restates the rules the API server's LimitRanger
// admission plugin enforces on pods: the defaults it fills in when a pod is
// created and the min, max and maxLimitRequestRatio checks it runs after
// every mutating webhook (and on pods/resize). Anything OpenVPA writes into a
// pod is checked with Validate first, so that a patch or a resize never
// produces a pod the API server refuses.
//
// Merge folds a namespace's LimitRanges into one item per type (Merged),
// the form pkg/recommendation caps recommendations to.
//
// The messages are the API server's own, so that what OpenVPA reports reads
// like the error a user would otherwise have seen on the ReplicaSet. The
// e2e suite checks the restatement against a real API server.
package limitrange

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Default fills in what LimitRanger's mutating phase adds to a pod being
// created: for every container and init container, each default request and
// default limit of the Container items that the container does not set. It
// modifies pod. A later LimitRange's default wins over an earlier one's, in
// the order given (the API server lists them from its cache).
func Default(pod *corev1.Pod, ranges []*corev1.LimitRange) {
	for _, lr := range ranges {
		if lr == nil {
			continue
		}
		requests, limits := containerDefaults(lr)
		if len(requests) == 0 && len(limits) == 0 {
			continue
		}
		for i := range pod.Spec.Containers {
			fillDefaults(&pod.Spec.Containers[i].Resources, requests, limits)
		}
		for i := range pod.Spec.InitContainers {
			fillDefaults(&pod.Spec.InitContainers[i].Resources, requests, limits)
		}
	}
}

func containerDefaults(lr *corev1.LimitRange) (requests, limits corev1.ResourceList) {
	requests, limits = corev1.ResourceList{}, corev1.ResourceList{}
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.DefaultRequest {
			requests[k] = v.DeepCopy()
		}
		for k, v := range item.Default {
			limits[k] = v.DeepCopy()
		}
	}
	return requests, limits
}

func fillDefaults(r *corev1.ResourceRequirements, requests, limits corev1.ResourceList) {
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for k, v := range limits {
		if _, ok := r.Limits[k]; !ok {
			r.Limits[k] = v.DeepCopy()
		}
	}
	for k, v := range requests {
		if _, ok := r.Requests[k]; !ok {
			r.Requests[k] = v.DeepCopy()
		}
	}
}

// Validate returns the violations LimitRanger's validating phase would
// refuse pod for, joined, or nil when every LimitRange admits it. Items of
// type Container are checked against every container and init container,
// items of type Pod against the pod's totals (pod-level resources, when the
// pod sets them, stand in for the containers' totals).
func Validate(pod *corev1.Pod, ranges []*corev1.LimitRange) error {
	var errs []error
	var podReq, podLim corev1.ResourceList
	for _, lr := range ranges {
		if lr == nil {
			continue
		}
		for i := range lr.Spec.Limits {
			item := &lr.Spec.Limits[i]
			switch item.Type {
			case corev1.LimitTypeContainer:
				for j := range pod.Spec.Containers {
					errs = checkItem(errs, item, string(item.Type), &pod.Spec.Containers[j].Resources)
				}
				for j := range pod.Spec.InitContainers {
					errs = checkItem(errs, item, string(item.Type), &pod.Spec.InitContainers[j].Resources)
				}
			case corev1.LimitTypePod:
				if podReq == nil {
					podReq, podLim = PodRequests(pod), PodLimits(pod)
				}
				errs = checkItem(errs, item, string(item.Type), &corev1.ResourceRequirements{Requests: podReq, Limits: podLim})
			}
		}
	}
	return errors.Join(errs...)
}

func checkItem(errs []error, item *corev1.LimitRangeItem, kind string, r *corev1.ResourceRequirements) []error {
	for _, name := range sortedNames(item.Min) {
		if err := minConstraint(kind, name, item.Min[name], r); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range sortedNames(item.Max) {
		if err := maxConstraint(kind, name, item.Max[name], r); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range sortedNames(item.MaxLimitRequestRatio) {
		if err := ratioConstraint(kind, name, item.MaxLimitRequestRatio[name], r); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// comparable returns request, limit and bound in one unit: milli-units when
// none of them is too large for that, whole units otherwise, as the API
// server compares them.
func comparable(req, lim, bound resource.Quantity) (int64, int64, int64) {
	r, l, b := req.Value(), lim.Value(), bound.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && b <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), bound.MilliValue()
	}
	return r, l, b
}

func minConstraint(kind string, name corev1.ResourceName, bound resource.Quantity, r *corev1.ResourceRequirements) error {
	req, hasReq := r.Requests[name]
	lim, hasLim := r.Limits[name]
	vr, vl, vb := comparable(req, lim, bound)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, bound.String())
	case vr < vb:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, bound.String(), req.String())
	case hasLim && vl < vb:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, bound.String(), lim.String())
	}
	return nil
}

func maxConstraint(kind string, name corev1.ResourceName, bound resource.Quantity, r *corev1.ResourceRequirements) error {
	req, hasReq := r.Requests[name]
	lim, hasLim := r.Limits[name]
	vr, vl, vb := comparable(req, lim, bound)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, bound.String())
	case vl > vb:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, bound.String(), lim.String())
	case hasReq && vr > vb:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, bound.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind string, name corev1.ResourceName, bound resource.Quantity, r *corev1.ResourceRequirements) error {
	req, hasReq := r.Requests[name]
	lim, hasLim := r.Limits[name]
	vr, vl, _ := comparable(req, lim, bound)
	if !hasReq || vr == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, bound.String())
	}
	if !hasLim || vl == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, bound.String())
	}
	ratio := float64(vl) / float64(vr)
	shown := ratio
	enforced := float64(bound.Value())
	if bound.Value() <= resource.MaxMilliValue {
		ratio *= 1000
		enforced = float64(bound.MilliValue())
	}
	if ratio > enforced {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, bound.String(), shown)
	}
	return nil
}

// PodRequests is the pod's total request per resource as LimitRanger counts
// it: the sum over containers (and restartable init containers), or the
// largest init container's need where that is higher, each pod-level cpu or
// memory request replacing the total.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	return podTotal(pod, func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Requests })
}

// PodLimits is PodRequests for limits.
func PodLimits(pod *corev1.Pod) corev1.ResourceList {
	return podTotal(pod, func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
}

func podTotal(pod *corev1.Pod, of func(*corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(total, of(&pod.Spec.Containers[i].Resources))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var need corev1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(total, of(&c.Resources))
			add(sidecars, of(&c.Resources))
			need = sidecars
		} else {
			need = corev1.ResourceList{}
			add(need, of(&c.Resources))
			add(need, sidecars)
		}
		maxOf(initMax, need)
	}
	maxOf(total, initMax)
	if pod.Spec.Resources != nil {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := of(pod.Spec.Resources)[name]; ok {
				total[name] = q.DeepCopy()
			}
		}
	}
	return total
}

func add(total, l corev1.ResourceList) {
	for name, q := range l {
		if have, ok := total[name]; ok {
			have.Add(q)
			total[name] = have
		} else {
			total[name] = q.DeepCopy()
		}
	}
}

func maxOf(total, l corev1.ResourceList) {
	for name, q := range l {
		if have, ok := total[name]; !ok || q.Cmp(have) > 0 {
			total[name] = q.DeepCopy()
		}
	}
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	if len(l) == 0 {
		return nil
	}
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// DefaultLimitRange fills in what the API server adds to a LimitRange when
// it is stored: in Container items, a missing default limit is the max, a
// missing default request is the default limit, else the min. It modifies
// lr. Objects read from the API server have had this done.
func DefaultLimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		for k, v := range item.Max {
			if _, ok := item.Default[k]; !ok {
				item.Default[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Default {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Min {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v.DeepCopy()
			}
		}
	}
}

// DefaultPod fills in what the API server adds to a pod being created
// before its webhooks see it: a container's missing request for a resource
// it has a limit for is the limit, then Default's LimitRange defaults.
func DefaultPod(pod *corev1.Pod, ranges []*corev1.LimitRange) {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for k, v := range r.Limits {
				if _, ok := r.Requests[k]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[k] = v.DeepCopy()
				}
			}
		}
	}
	Default(pod, ranges)
}
