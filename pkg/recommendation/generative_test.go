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
	"math/big"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
)

// TestPlansAreAdmissible generates pods, LimitRanges, policies and
// recommendations and checks every plan two ways: the pod it gives passes
// the LimitRange rules the API server enforces (limitrange.Validate, itself
// checked against a real API server in e2e/admission), and where upstream's
// capping (restated below, independently of cap.go) gives an admissible pod,
// the plan is exactly upstream's.
func TestPlansAreAdmissible(t *testing.T) {
	cases := 5000
	if testing.Short() {
		cases = 500
	}
	rng := rand.New(rand.NewPCG(23, 1))
	var asUpstream, upstreamRefused, overridden, leftAlone int
	for n := 0; n < cases; n++ {
		g := generate(rng)
		for Admissible(g.pod, nil, g.lr.Items) != nil {
			// A workload's pods were admitted before the VPA came.
			g = generate(rng)
		}
		plan := PlanForPod(g.pod, g.vpa, g.lr)
		if plan.Changed() {
			if err := Admissible(g.pod, plan.Containers, g.lr.Items); err != nil {
				t.Fatalf("case %d: the plan gives a pod the API server refuses: %v\n%s", n, err, g)
			}
		} else if plan.Conflict == nil && hasTarget(g) {
			// Nothing changed and no conflict: only right when capping
			// left nothing to set.
			if want := upstreamCap(g); anySet(want) {
				t.Fatalf("case %d: the plan is empty without a conflict, upstream sets %v\n%s", n, want, g)
			}
		}
		if plan.Conflict != nil && !plan.PolicyOverridden && plan.Changed() {
			t.Fatalf("case %d: a conflict without the fallback must leave the pod alone\n%s", n, g)
		}
		switch {
		case plan.PolicyOverridden:
			overridden++
		case plan.Conflict != nil:
			leftAlone++
		}
		if g.offUnderPodRange {
			continue // the deliberate difference: mode Off containers are never scaled
		}
		want := upstreamCap(g)
		if Admissible(g.pod, want, g.lr.Items) != nil {
			upstreamRefused++
			continue
		}
		asUpstream++
		if plan.Conflict != nil {
			t.Fatalf("case %d: upstream's result is admissible, but the plan has a conflict: %v\n%s", n, plan.Conflict, g)
		}
		for i := range want {
			if !equalLists(plan.Containers[i].Requests, want[i].Requests) || !equalLists(plan.Containers[i].Limits, want[i].Limits) {
				t.Fatalf("case %d container %d: got %v / %v, upstream gives %v / %v\n%s", n, i,
					plan.Containers[i].Requests, plan.Containers[i].Limits, want[i].Requests, want[i].Limits, g)
			}
		}
	}
	t.Logf("%d cases: %d as upstream, %d where upstream's pod is refused (%d of all plans took the LimitRange-first fallback, %d left the pod alone)",
		cases, asUpstream, upstreamRefused, overridden, leftAlone)
	if asUpstream < cases/4 || upstreamRefused == 0 || overridden == 0 || leftAlone == 0 {
		t.Errorf("the generator does not cover every outcome enough")
	}
}

type generated struct {
	pod              *corev1.Pod
	vpa              *vpav1.VerticalPodAutoscaler
	lr               limitrange.Merged
	offUnderPodRange bool
}

func (g generated) String() string {
	s := "pod:\n"
	for _, c := range g.pod.Spec.Containers {
		s += fmt.Sprintf("  %s requests %v limits %v\n", c.Name, c.Resources.Requests, c.Resources.Limits)
	}
	for _, lr := range g.lr.Items {
		for _, it := range lr.Spec.Limits {
			s += fmt.Sprintf("LimitRange %s %s: min %v max %v default %v defaultRequest %v ratio %v\n", lr.Name, it.Type, it.Min, it.Max, it.Default, it.DefaultRequest, it.MaxLimitRequestRatio)
		}
	}
	for _, r := range g.vpa.Status.Recommendation.ContainerRecommendations {
		s += fmt.Sprintf("recommendation %s: %v\n", r.ContainerName, r.Target)
	}
	if p := g.vpa.Spec.ResourcePolicy; p != nil {
		for _, cp := range p.ContainerPolicies {
			s += fmt.Sprintf("policy %s: mode %v min %v max %v values %v\n", cp.ContainerName, cp.Mode, cp.MinAllowed, cp.MaxAllowed, cp.ControlledValues)
		}
	}
	return s
}

func hasTarget(g generated) bool {
	return len(g.vpa.Status.Recommendation.ContainerRecommendations) > 0
}

func anySet(rs []ContainerResources) bool {
	for _, r := range rs {
		if len(r.Requests) > 0 {
			return true
		}
	}
	return false
}

func cpuQ(rng *rand.Rand) resource.Quantity {
	return *resource.NewMilliQuantity(int64(10+rng.IntN(2000)), resource.DecimalSI)
}
func memQ(rng *rand.Rand) resource.Quantity {
	return *resource.NewQuantity(int64(8+rng.IntN(2048))<<20, resource.BinarySI)
}

// list returns cpu and memory quantities, each present with probability p.
func list(rng *rand.Rand, p float64) corev1.ResourceList {
	l := corev1.ResourceList{}
	if rng.Float64() < p {
		l[corev1.ResourceCPU] = cpuQ(rng)
	}
	if rng.Float64() < p {
		l[corev1.ResourceMemory] = memQ(rng)
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

func scaled(l corev1.ResourceList, num, den int64) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range l {
		if k == corev1.ResourceCPU {
			out[k] = *resource.NewMilliQuantity(v.MilliValue()*num/den, resource.DecimalSI)
		} else {
			out[k] = *resource.NewQuantity(v.Value()*num/den, resource.BinarySI)
		}
	}
	return out
}

func generate(rng *rand.Rand) generated {
	var g generated
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	for i := 0; i < 1+rng.IntN(3); i++ {
		req := list(rng, 0.8)
		var lim corev1.ResourceList
		switch rng.IntN(4) {
		case 1:
			lim = req.DeepCopy()
		case 2:
			lim = scaled(req, 2, 1)
		case 3:
			lim = scaled(req, 3, 2)
		}
		p.Spec.Containers = append(p.Spec.Containers, container(fmt.Sprintf("c%d", i), req, lim))
	}
	var ranges []*corev1.LimitRange
	for i := 0; i < 1+rng.IntN(2); i++ {
		var items []corev1.LimitRangeItem
		if rng.IntN(2) == 0 {
			it := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: list(rng, 0.3), Max: list(rng, 0.4)}
			if rng.IntN(3) == 0 {
				it.Default = list(rng, 0.5)
				it.DefaultRequest = scaled(it.Default, 1, 2)
			}
			if rng.IntN(6) == 0 {
				it.MaxLimitRequestRatio = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			}
			items = append(items, it)
		}
		if rng.IntN(2) == 0 {
			it := corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: list(rng, 0.6)}
			if rng.IntN(3) == 0 {
				it.Min = list(rng, 0.3)
			}
			items = append(items, it)
		}
		ranges = append(ranges, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("lr%d", i)}, Spec: corev1.LimitRangeSpec{Limits: items}})
	}
	// What the webhook sees: the LimitRanges as stored, the pod with the
	// API server's and LimitRanger's defaults.
	for _, lr := range ranges {
		limitrange.DefaultLimitRange(lr)
	}
	limitrange.DefaultPod(p, ranges)
	g.pod = p
	g.lr = limitrange.Merge(ranges)
	rec := &vpav1.RecommendedPodResources{}
	var pol *vpav1.PodResourcePolicy
	for _, c := range p.Spec.Containers {
		if rng.IntN(4) > 0 {
			t := corev1.ResourceList{corev1.ResourceCPU: cpuQ(rng), corev1.ResourceMemory: memQ(rng)}
			rec.ContainerRecommendations = append(rec.ContainerRecommendations, vpav1.RecommendedContainerResources{ContainerName: c.Name, Target: t})
		}
		if rng.IntN(3) == 0 {
			if pol == nil {
				pol = &vpav1.PodResourcePolicy{}
			}
			cp := vpav1.ContainerResourcePolicy{ContainerName: c.Name, MinAllowed: list(rng, 0.3), MaxAllowed: list(rng, 0.3)}
			switch rng.IntN(6) {
			case 0:
				cp.ControlledValues = ptr(vpav1.ContainerControlledValuesRequestsOnly)
			case 1:
				cp.Mode = ptr(vpav1.ContainerScalingModeOff)
				if g.lr.Pod != nil {
					g.offUnderPodRange = true
				}
			}
			pol.ContainerPolicies = append(pol.ContainerPolicies, cp)
		}
	}
	g.vpa = vpaWith(pol, rec)
	return g
}

// upstreamCap restates upstream 1.7's capping and limits for the pod
// (capping.go and recommendation_provider.go): insert the requests of
// containers without a recommendation when a Pod LimitRange applies, scale
// by the pod totals, then per container the LimitRange bounds, minAllowed and
// maxAllowed, the RequestsOnly limit, and proportional limits. Containers in
// mode Off get nothing (callers skip cases where upstream would scale them).
func upstreamCap(g generated) []ContainerResources {
	pod, policy, lr := g.pod, g.vpa.Spec.ResourcePolicy, g.lr
	n := len(pod.Spec.Containers)
	targets := make([]corev1.ResourceList, n)
	for i, c := range pod.Spec.Containers {
		cp := vpav1.GetContainerResourcePolicy(c.Name, policy)
		if cp.ScalingMode() == vpav1.ContainerScalingModeOff {
			continue
		}
		for _, r := range g.vpa.Status.Recommendation.ContainerRecommendations {
			if r.ContainerName == c.Name {
				targets[i] = r.Target.DeepCopy()
			}
		}
		if targets[i] == nil && lr.Pod != nil && len(c.Resources.Requests) > 0 {
			targets[i] = c.Resources.Requests.DeepCopy()
		}
	}
	units := func(name corev1.ResourceName, q resource.Quantity) int64 {
		if name == corev1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	quantity := func(name corev1.ResourceName, v int64) resource.Quantity {
		if name == corev1.ResourceCPU {
			return *resource.NewMilliQuantity(v, resource.DecimalSI)
		}
		return *resource.NewQuantity(v, resource.BinarySI)
	}
	mulDiv := func(a, b, c int64, up bool) int64 {
		var x, q, r big.Int
		x.Mul(big.NewInt(a), big.NewInt(b))
		q.QuoRem(&x, big.NewInt(c), &r)
		if up && r.Sign() > 0 {
			q.Add(&q, big.NewInt(1))
		}
		return q.Int64()
	}
	// propLimit is upstream's GetProportionalLimit in units; ok false when
	// no limit is set.
	propLimit := func(name corev1.ResourceName, c corev1.Container, newReq int64, def corev1.ResourceList) (int64, bool) {
		lim, hasLim := c.Resources.Limits[name]
		if !hasLim || lim.IsZero() {
			lim, hasLim = def[name]
		}
		if !hasLim || lim.IsZero() || newReq == 0 {
			return 0, false
		}
		req, hasReq := c.Resources.Requests[name]
		if !hasReq || req.IsZero() || units(name, req) == units(name, lim) {
			return newReq, true
		}
		return mulDiv(units(name, lim), newReq, units(name, req), false), true
	}
	if it := lr.Pod; it != nil {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			var sumLim, sumRec int64
			for i, c := range pod.Spec.Containers {
				var v int64
				if targets[i] != nil {
					q, ok := targets[i][name]
					if !ok {
						continue
					}
					v = units(name, q)
				} else if q, ok := c.Resources.Requests[name]; ok {
					v = units(name, q)
				}
				if l, ok := propLimit(name, c, v, it.Default); ok {
					sumLim += l
				}
				sumRec += v
			}
			minQ, maxQ := it.Min[name], it.Max[name]
			lo, hi := units(name, minQ), units(name, maxQ)
			if lo <= sumLim && lo <= sumRec && (hi == 0 || hi >= sumLim) {
				continue
			}
			if lo > sumRec && sumLim != 0 && sumRec != 0 {
				for i := range targets {
					if q, ok := targets[i][name]; ok {
						targets[i][name] = quantity(name, mulDiv(units(name, q), lo, sumRec, true))
					}
				}
				continue
			}
			if sumLim == 0 {
				continue
			}
			var total int64
			if lo > sumLim {
				total = lo
			}
			if hi != 0 && hi < sumLim {
				total = hi
			}
			for i := range targets {
				if q, ok := targets[i][name]; ok {
					targets[i][name] = quantity(name, mulDiv(units(name, q), total, sumLim, false))
				}
			}
		}
	}
	out := make([]ContainerResources, n)
	var def corev1.ResourceList
	if lr.Container != nil {
		def = lr.Container.Default
	}
	for i, c := range pod.Spec.Containers {
		t := targets[i]
		if t == nil {
			continue
		}
		cp := vpav1.GetContainerResourcePolicy(c.Name, policy)
		for name := range t {
			if !cp.Controls(name) {
				delete(t, name)
			}
		}
		for name, q := range t {
			v := units(name, q)
			if it := lr.Container; it != nil {
				bound := func(b corev1.ResourceList) (int64, bool) {
					bq, ok := b[name]
					if !ok || bq.IsZero() {
						return 0, false
					}
					lim, ok := c.Resources.Limits[name]
					if !ok || lim.IsZero() {
						lim, ok = def[name]
					}
					if !ok || lim.IsZero() {
						return 0, false
					}
					req, ok := c.Resources.Requests[name]
					if !ok || req.IsZero() {
						return units(name, bq), true
					}
					return mulDiv(units(name, req), units(name, bq), units(name, lim), false), true
				}
				lo, hasLo := bound(it.Min)
				if m, ok := it.Min[name]; ok && !m.IsZero() && (!hasLo || units(name, m) > lo) {
					lo, hasLo = units(name, m), true
				}
				if hasLo && v < lo {
					v = lo
				}
				if hi, ok := bound(it.Max); ok && v > hi {
					v = hi
				}
			}
			if cp != nil {
				if m, ok := cp.MinAllowed[name]; ok && !m.IsZero() && v < units(name, m) {
					v = units(name, m)
				}
				if m, ok := cp.MaxAllowed[name]; ok && !m.IsZero() && v > units(name, m) {
					v = units(name, m)
				}
			}
			if cp.ControlledValuesOrDefault() == vpav1.ContainerControlledValuesRequestsOnly {
				if l, ok := c.Resources.Limits[name]; ok && !l.IsZero() && v > units(name, l) {
					v = units(name, l)
				}
			}
			t[name] = quantity(name, v)
		}
		if len(t) == 0 {
			continue
		}
		out[i].Requests = t
		if cp.ControlledValuesOrDefault() == vpav1.ContainerControlledValuesRequestsAndLimits {
			for name, q := range t {
				if l, ok := propLimit(name, c, units(name, q), def); ok {
					if out[i].Limits == nil {
						out[i].Limits = corev1.ResourceList{}
					}
					out[i].Limits[name] = quantity(name, l)
				}
			}
		}
	}
	return out
}
