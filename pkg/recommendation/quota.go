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
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
)

// NoteQuota is the start of the note on a request whose increase was
// capped to the quota: "cpu increase capped to ResourceQuota <names>".
const NoteQuota = "increase capped to ResourceQuota"

// QuotaCap says how the quota fit capped a plan.
type QuotaCap struct {
	// Quotas names the quotas that leave the least.
	Quotas string
	// Resources are the resources whose increase was capped, cpu before
	// memory.
	Resources []corev1.ResourceName
	// Wanted are the pod's totals with the plan as capped before, Allowed
	// the most the pod may be charged.
	Wanted, Allowed quota.Totals
	// KeptRequests says the capped plan was refused by the LimitRanges, so
	// the pod keeps its requests.
	KeptRequests bool
}

// quotaSteps is the resolution of the fraction of an increase the quota
// fit keeps.
const quotaSteps = 1 << 20

// fitQuota is the quota fit: when the pod with plan would be charged more
// than the namespace's ResourceQuotas allow it (quotaAllowance), the
// increase of each such resource over the pod's own requests is cut, for
// every container by the same fraction, to the largest that fits, and the
// limits follow the requests (RequestsAndLimits). Decreases are kept. The
// pod with its own requests is always allowed, so the plan never makes the
// pod refused where it would have passed. The capped plan is checked
// against the LimitRanges again; if they refuse it, the pod keeps its
// requests.
func fitQuota(pod *corev1.Pod, lr limitrange.Merged, fit Fit, plan *Plan) {
	if fit.Quota == nil || pod == nil || !plan.Changed() {
		return
	}
	own := quota.TotalsOf(pod)
	allowed := quotaAllowance(own, fit.Quota, fit.Surge)
	wanted := quota.TotalsOf(Applied(pod, plan.Containers))
	if wanted.Within(allowed) {
		return
	}
	qc := &QuotaCap{Quotas: fit.Quota.Names(), Wanted: wanted, Allowed: allowed}
	var defaults corev1.ResourceList
	if lr.Container != nil {
		defaults = lr.Container.Default
	}
	containers := slices.Clone(plan.Containers)
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if wanted.Requests.Get(name) <= allowed.Requests.Get(name) && wanted.Limits.Get(name) <= allowed.Limits.Get(name) {
			continue
		}
		qc.Resources = append(qc.Resources, name)
		fits := func(steps int64) bool {
			t := quota.TotalsOf(Applied(pod, increaseScaled(pod, plan.Containers, containers, name, steps, defaults)))
			return t.Requests.Get(name) <= allowed.Requests.Get(name) && t.Limits.Get(name) <= allowed.Limits.Get(name)
		}
		// The largest fraction that fits; none of the increase always does.
		lo, hi := int64(0), int64(quotaSteps)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if fits(mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		containers = increaseScaled(pod, plan.Containers, containers, name, lo, defaults)
		for i := range containers {
			r, ok := plan.Containers[i].Requests[name]
			if got := containers[i].Requests[name]; ok && got.Cmp(r) != 0 {
				containers[i].Notes = append(slices.Clip(containers[i].Notes), fmt.Sprintf("%s %s %s", name, NoteQuota, qc.Quotas))
			}
		}
	}
	plan.Quota = qc
	if len(lr.Items) > 0 || pod.Spec.Resources != nil {
		if err := Admissible(pod, containers, lr.Items); err != nil {
			qc.KeptRequests = true
			plan.Containers = make([]ContainerResources, len(pod.Spec.Containers))
			plan.Node = nil
			return
		}
	}
	plan.Containers = containers
}

// quotaAllowance is the most a pod whose own totals are own may be charged:
// what the quotas leave, less room for surge (at least one) more pods with
// the pod's own totals, and never less than own.
func quotaAllowance(own quota.Totals, room *quota.Room, surge int32) quota.Totals {
	k := int64(max(surge, 1))
	one := func(left, own int64) int64 {
		if left == quota.Unlimited {
			return left
		}
		reserve := own * k
		if own != 0 && reserve/own != k {
			return own // overflow: no room to spare
		}
		return max(own, left-reserve)
	}
	return quota.Totals{
		Requests: nodefit.Amounts{CPU: one(room.Requests.CPU, own.Requests.CPU), Memory: one(room.Requests.Memory, own.Requests.Memory)},
		Limits:   nodefit.Amounts{CPU: one(room.Limits.CPU, own.Limits.CPU), Memory: one(room.Limits.Memory, own.Limits.Memory)},
	}
}

// increaseScaled returns cur (a copy where it changes) with resource name of
// every container set to its own request plus steps/quotaSteps of the
// plan's increase over it, and, where the plan sets that limit, the limit
// that keeps the container's ratio. A decrease is kept as planned.
func increaseScaled(pod *corev1.Pod, planned, cur []ContainerResources, name corev1.ResourceName, steps int64, defaults corev1.ResourceList) []ContainerResources {
	out := slices.Clone(cur)
	for i := range out {
		if i >= len(pod.Spec.Containers) {
			break
		}
		want, ok := planned[i].Requests[name]
		if !ok {
			continue
		}
		c := &pod.Spec.Containers[i]
		var own int64
		ownQ, hasOwn := c.Resources.Requests[name]
		if hasOwn {
			own = milliOrValue(name, ownQ)
		}
		w := milliOrValue(name, want)
		if w <= own {
			continue
		}
		// Rounded up: the search finds the largest that fits, to the unit.
		v := own + mulDivCeil(w-own, steps, quotaSteps)
		if steps >= quotaSteps {
			v = w
		}
		q := quantityOf(name, v, want.Format)
		out[i].Requests = withResource(out[i].Requests, name, q)
		if _, hasLimit := planned[i].Limits[name]; hasLimit {
			l, ok, _ := ProportionalLimit(name, get(c.Resources.Limits, name), get(c.Resources.Requests, name), &q, get(defaults, name))
			if ok {
				out[i].Limits = withResource(out[i].Limits, name, l)
			}
		}
	}
	return out
}

func milliOrValue(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func quantityOf(name corev1.ResourceName, v int64, format resource.Format) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(v, format)
	}
	return *resource.NewQuantity(v, format)
}

// withResource returns a copy of l with name set to q.
func withResource(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) corev1.ResourceList {
	out := make(corev1.ResourceList, len(l)+1)
	for k, v := range l {
		out[k] = v
	}
	out[name] = q
	return out
}
