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
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/testbuild"
)

func rl(cpu, mem string) corev1.ResourceList { return testbuild.Resources(cpu, mem) }

func container(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func pod(cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: cs}}
}

func target(name string, t corev1.ResourceList) vpav1.RecommendedContainerResources {
	return vpav1.RecommendedContainerResources{ContainerName: name, Target: t, LowerBound: t.DeepCopy(), UpperBound: t.DeepCopy()}
}

func recs(rs ...vpav1.RecommendedContainerResources) *vpav1.RecommendedPodResources {
	return &vpav1.RecommendedPodResources{ContainerRecommendations: rs}
}

func policy(cps ...vpav1.ContainerResourcePolicy) *vpav1.PodResourcePolicy {
	return &vpav1.PodResourcePolicy{ContainerPolicies: cps}
}

func ptr[T any](v T) *T { return &v }

// equalLists compares resource lists by value, not by representation.
func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func TestProportionalLimit(t *testing.T) {
	q := func(s string) *resource.Quantity {
		if s == "" {
			return nil
		}
		v := resource.MustParse(s)
		return &v
	}
	tests := map[string]struct {
		name                              corev1.ResourceName
		limit, request, newRequest, deflt string
		want                              string
		wantOK                            bool
		wantNote                          bool
	}{
		"keeps cpu ratio":                 {name: corev1.ResourceCPU, limit: "2", request: "1", newRequest: "250m", want: "500m", wantOK: true},
		"keeps memory ratio":              {name: corev1.ResourceMemory, limit: "300Mi", request: "100Mi", newRequest: "200Mi", want: "600Mi", wantOK: true},
		"no limit, no default":            {name: corev1.ResourceCPU, request: "1", newRequest: "2"},
		"zero limit uses default":         {name: corev1.ResourceCPU, limit: "0", request: "1", newRequest: "2", deflt: "3", want: "6", wantOK: true},
		"missing limit uses default":      {name: corev1.ResourceMemory, request: "1Gi", newRequest: "2Gi", deflt: "2Gi", want: "4Gi", wantOK: true},
		"no request: limit = new request": {name: corev1.ResourceCPU, limit: "2", newRequest: "300m", want: "300m", wantOK: true},
		"request == limit":                {name: corev1.ResourceCPU, limit: "1", request: "1000m", newRequest: "1500m", want: "1500m", wantOK: true},
		"no new request":                  {name: corev1.ResourceCPU, limit: "1", request: "500m"},
		"rounds cpu down to millicores":   {name: corev1.ResourceCPU, limit: "1", request: "3", newRequest: "1", want: "333m", wantOK: true},
		"overflow caps and notes":         {name: corev1.ResourceMemory, limit: "8E", request: "1", newRequest: "8E", want: "9223372036854775807", wantOK: true, wantNote: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok, note := ProportionalLimit(tc.name, q(tc.limit), q(tc.request), q(tc.newRequest), q(tc.deflt))
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if (note != "") != tc.wantNote {
				t.Errorf("note = %q, want note: %v", note, tc.wantNote)
			}
			if ok && got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("limit = %s, want %s", got.String(), tc.want)
			}
		})
	}
}

func TestCap(t *testing.T) {
	requestsOnly := ptr(vpav1.ContainerControlledValuesRequestsOnly)
	off := ptr(vpav1.ContainerScalingModeOff)
	tests := map[string]struct {
		pod       *corev1.Pod
		rec       *vpav1.RecommendedPodResources
		policy    *vpav1.PodResourcePolicy
		lr        limitrange.Merged
		want      map[string]corev1.ResourceList // container -> target
		wantNotes map[string][]string
	}{
		"no policy, no limit range": {
			pod:  pod(container("a", rl("100m", "100Mi"), nil)),
			rec:  recs(target("a", rl("200m", "200Mi"))),
			want: map[string]corev1.ResourceList{"a": rl("200m", "200Mi")},
		},
		"minAllowed and maxAllowed": {
			pod:       pod(container("a", nil, nil)),
			rec:       recs(target("a", rl("10m", "10Gi"))),
			policy:    policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MinAllowed: rl("50m", ""), MaxAllowed: rl("", "1Gi")}),
			want:      map[string]corev1.ResourceList{"a": rl("50m", "1Gi")},
			wantNotes: map[string][]string{"a": {"cpu capped to minAllowed", "memory capped to maxAllowed"}},
		},
		"star policy applies to containers without their own": {
			pod:       pod(container("a", nil, nil), container("b", nil, nil)),
			rec:       recs(target("a", rl("1", "")), target("b", rl("1", ""))),
			policy:    policy(vpav1.ContainerResourcePolicy{ContainerName: "*", MaxAllowed: rl("500m", "")}, vpav1.ContainerResourcePolicy{ContainerName: "b"}),
			want:      map[string]corev1.ResourceList{"a": rl("500m", ""), "b": rl("1", "")},
			wantNotes: map[string][]string{"a": {"cpu capped to maxAllowed"}},
		},
		"controlledResources drops memory": {
			pod:    pod(container("a", nil, nil)),
			rec:    recs(target("a", rl("1", "1Gi"))),
			policy: policy(vpav1.ContainerResourcePolicy{ContainerName: "a", ControlledResources: &[]corev1.ResourceName{corev1.ResourceCPU}}),
			want:   map[string]corev1.ResourceList{"a": rl("1", "")},
		},
		"mode Off gets nothing": {
			pod:    pod(container("a", nil, nil)),
			rec:    recs(target("a", rl("1", "1Gi"))),
			policy: policy(vpav1.ContainerResourcePolicy{ContainerName: "a", Mode: off}),
			want:   map[string]corev1.ResourceList{},
		},
		"recommendation for a container not in the pod is dropped": {
			pod:  pod(container("a", nil, nil)),
			rec:  recs(target("gone", rl("1", "1Gi")), target("a", rl("2", ""))),
			want: map[string]corev1.ResourceList{"a": rl("2", "")},
		},
		"RequestsOnly caps to the container limit": {
			pod:       pod(container("a", rl("100m", "100Mi"), rl("500m", "1Gi"))),
			rec:       recs(target("a", rl("800m", "200Mi"))),
			policy:    policy(vpav1.ContainerResourcePolicy{ContainerName: "a", ControlledValues: requestsOnly}),
			want:      map[string]corev1.ResourceList{"a": rl("500m", "200Mi")},
			wantNotes: map[string][]string{"a": {"cpu capped to container limit"}},
		},
		"container LimitRange max keeps the limit ratio": {
			// limit:request is 2, so a max limit of 1 core is a max request of 500m.
			pod:       pod(container("a", rl("100m", ""), rl("200m", ""))),
			rec:       recs(target("a", rl("2", ""))),
			lr:        limitrange.Merged{Container: &corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("1", "")}},
			want:      map[string]corev1.ResourceList{"a": rl("500m", "")},
			wantNotes: map[string][]string{"a": {"cpu capped to fit Max in container LimitRange"}},
		},
		"container LimitRange min applies to the request too": {
			pod:       pod(container("a", nil, nil)),
			rec:       recs(target("a", rl("", "10Mi"))),
			lr:        limitrange.Merged{Container: &corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("", "64Mi")}},
			want:      map[string]corev1.ResourceList{"a": rl("", "64Mi")},
			wantNotes: map[string][]string{"a": {"memory capped to fit Min in container LimitRange"}},
		},
		"VPA policy wins over the LimitRange": {
			pod:       pod(container("a", nil, nil)),
			rec:       recs(target("a", rl("", "10Mi"))),
			lr:        limitrange.Merged{Container: &corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("", "64Mi")}},
			policy:    policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MaxAllowed: rl("", "32Mi")}),
			want:      map[string]corev1.ResourceList{"a": rl("", "32Mi")},
			wantNotes: map[string][]string{"a": {"memory capped to fit Min in container LimitRange", "memory capped to maxAllowed"}},
		},
		"pod LimitRange max scales all containers": {
			// Limits are 2x requests; the pod may have 2 cores of limits in total.
			pod: pod(container("a", rl("1", ""), rl("2", "")), container("b", rl("1", ""), rl("2", ""))),
			rec: recs(target("a", rl("1", "")), target("b", rl("1", ""))),
			lr:  limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("2", "")}},
			// The scaling maps the sum of limits (4) onto max (2): each request halves.
			want: map[string]corev1.ResourceList{"a": rl("500m", ""), "b": rl("500m", "")},
		},
		"pod LimitRange min scales requests up": {
			pod:  pod(container("a", rl("", "100Mi"), rl("", "100Mi")), container("b", rl("", "100Mi"), rl("", "100Mi"))),
			rec:  recs(target("a", rl("", "10Mi")), target("b", rl("", "30Mi"))),
			lr:   limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: rl("", "80Mi")}},
			want: map[string]corev1.ResourceList{"a": rl("", "20Mi"), "b": rl("", "60Mi")},
		},
		"pod LimitRange min scales requests up without any limit": {
			// Upstream scales up only when some container has a limit, and
			// leaves this pod at 40m against a min of 100m: refused.
			pod:  pod(container("a", rl("50m", ""), nil), container("b", rl("50m", ""), nil)),
			rec:  recs(target("a", rl("10m", "")), target("b", rl("30m", ""))),
			lr:   limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: rl("100m", "")}},
			want: map[string]corev1.ResourceList{"a": rl("25m", ""), "b": rl("75m", "")},
		},
		"pod LimitRange counts containers without a recommendation": {
			// b is scaled too (ForPod gives it 500m); Cap leaves it out.
			pod:  pod(container("a", rl("1", ""), rl("1", "")), container("b", rl("1", ""), rl("1", ""))),
			rec:  recs(target("a", rl("3", ""))),
			lr:   limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("2", "")}},
			want: map[string]corev1.ResourceList{"a": rl("1500m", "")},
		},
		"pod LimitRange: a container in mode Off keeps its share": {
			// Upstream would scale a by 2/4 and leave the pod at 2.5 cores;
			// with b fixed at 1, a gets the 1 core left.
			pod:    pod(container("a", rl("1", ""), rl("1", "")), container("b", rl("1", ""), rl("1", ""))),
			rec:    recs(target("a", rl("3", "")), target("b", rl("3", ""))),
			policy: policy(vpav1.ContainerResourcePolicy{ContainerName: "b", Mode: off}),
			lr:     limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("2", "")}},
			want:   map[string]corev1.ResourceList{"a": rl("1", "")},
		},
		"nil recommendation": {
			pod:  pod(container("a", nil, nil)),
			want: map[string]corev1.ResourceList{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			podBefore := tc.pod.DeepCopy()
			var recBefore *vpav1.RecommendedPodResources
			if tc.rec != nil {
				recBefore = tc.rec.DeepCopy()
			}
			got := Cap(tc.pod, tc.rec, tc.policy, tc.lr)
			targets := map[string]corev1.ResourceList{}
			for _, r := range got.Recommendation.ContainerRecommendations {
				targets[r.ContainerName] = r.Target
			}
			if len(targets) != len(tc.want) {
				t.Fatalf("targets = %v, want %v", targets, tc.want)
			}
			for c, want := range tc.want {
				if !equalLists(targets[c], want) {
					t.Errorf("target of %s = %v, want %v", c, targets[c], want)
				}
			}
			wantNotes := tc.wantNotes
			if wantNotes == nil {
				wantNotes = map[string][]string{}
			}
			if !reflect.DeepEqual(got.Notes, wantNotes) {
				t.Errorf("notes = %q, want %q", got.Notes, wantNotes)
			}
			if !equality.Semantic.DeepEqual(tc.pod, podBefore) {
				t.Error("Cap modified the pod")
			}
			if tc.rec != nil && !equality.Semantic.DeepEqual(tc.rec, recBefore) {
				t.Error("Cap modified the recommendation")
			}
		})
	}
}

func TestCapBounds(t *testing.T) {
	p := pod(container("a", nil, nil))
	rec := recs(vpav1.RecommendedContainerResources{
		ContainerName: "a", Target: rl("1", ""), LowerBound: rl("10m", ""), UpperBound: rl("5", ""), UncappedTarget: rl("1", ""),
	})
	got := Cap(p, rec, policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MinAllowed: rl("100m", ""), MaxAllowed: rl("2", "")}), limitrange.Merged{})
	r := got.Recommendation.ContainerRecommendations[0]
	if !equalLists(r.LowerBound, rl("100m", "")) || !equalLists(r.UpperBound, rl("2", "")) {
		t.Errorf("bounds = %v..%v, want 100m..2", r.LowerBound, r.UpperBound)
	}
	if !equalLists(r.UncappedTarget, rl("1", "")) {
		t.Errorf("uncapped target changed: %v", r.UncappedTarget)
	}
}

// vpaWith returns a VPA with the given resource policy and recommendation.
func vpaWith(p *vpav1.PodResourcePolicy, r *vpav1.RecommendedPodResources) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{Spec: vpav1.VerticalPodAutoscalerSpec{ResourcePolicy: p}, Status: vpav1.VerticalPodAutoscalerStatus{Recommendation: r}}
}

func TestForPod(t *testing.T) {
	requestsOnly := ptr(vpav1.ContainerControlledValuesRequestsOnly)
	tests := map[string]struct {
		pod  *corev1.Pod
		vpa  *vpav1.VerticalPodAutoscaler
		lr   limitrange.Merged
		want []ContainerResources
	}{
		"proportional limits": {
			pod:  pod(container("a", rl("100m", "100Mi"), rl("200m", "300Mi"))),
			vpa:  vpaWith(nil, recs(target("a", rl("250m", "200Mi")))),
			want: []ContainerResources{{Requests: rl("250m", "200Mi"), Limits: rl("500m", "600Mi")}},
		},
		"no limits stay unlimited": {
			pod:  pod(container("a", rl("100m", ""), nil)),
			vpa:  vpaWith(nil, recs(target("a", rl("250m", "200Mi")))),
			want: []ContainerResources{{Requests: rl("250m", "200Mi")}},
		},
		"LimitRange default stands in for a missing limit": {
			pod:  pod(container("a", rl("100m", ""), nil)),
			vpa:  vpaWith(nil, recs(target("a", rl("200m", "")))),
			lr:   limitrange.Merged{Container: &corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("300m", "")}},
			want: []ContainerResources{{Requests: rl("200m", ""), Limits: rl("600m", "")}},
		},
		"RequestsOnly never sets limits": {
			pod:  pod(container("a", rl("100m", ""), rl("1", ""))),
			vpa:  vpaWith(policy(vpav1.ContainerResourcePolicy{ContainerName: "*", ControlledValues: requestsOnly}), recs(target("a", rl("200m", "")))),
			want: []ContainerResources{{Requests: rl("200m", "")}},
		},
		"issue 23: a pod LimitRange scales the container without a recommendation too": {
			pod: pod(container("hamster0", rl("100m", "100Mi"), rl("100m", "100Mi")),
				container("hamster1", rl("400m", "600Mi"), rl("400m", "600Mi"))),
			vpa: vpaWith(nil, recs(target("hamster0", rl("400m", "600Mi")))),
			lr:  limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("400m", "1Gi")}},
			// Upstream 1.7's numbers: both containers at 200m / 512Mi.
			want: []ContainerResources{
				{Requests: rl("200m", "512Mi"), Limits: rl("200m", "512Mi")},
				{Requests: rl("200m", "512Mi"), Limits: rl("200m", "512Mi")},
			},
		},
		"a pod LimitRange that fits still patches every container, as upstream does": {
			pod:  pod(container("a", rl("100m", ""), nil), container("b", rl("100m", ""), nil)),
			vpa:  vpaWith(nil, recs(target("a", rl("200m", "")))),
			lr:   limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("1", "")}},
			want: []ContainerResources{{Requests: rl("200m", "")}, {Requests: rl("100m", "")}},
		},
		"containers without a recommendation get nothing": {
			pod:  pod(container("a", nil, nil), container("b", nil, nil)),
			vpa:  vpaWith(nil, recs(target("b", rl("1", "")))),
			want: []ContainerResources{{}, {Requests: rl("1", "")}},
		},
		"no recommendation": {
			pod:  pod(container("a", nil, nil)),
			vpa:  vpaWith(nil, nil),
			want: []ContainerResources{{}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ForPod(tc.pod, tc.vpa, tc.lr)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d entries, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if !equalLists(got[i].Requests, tc.want[i].Requests) || !equalLists(got[i].Limits, tc.want[i].Limits) {
					t.Errorf("container %d: got %v / %v, want %v / %v", i, got[i].Requests, got[i].Limits, tc.want[i].Requests, tc.want[i].Limits)
				}
				if (got[i].Limits == nil) != (tc.want[i].Limits == nil) {
					t.Errorf("container %d: limits nil = %v, want %v", i, got[i].Limits == nil, tc.want[i].Limits == nil)
				}
			}
		})
	}
}

func TestPlanForPod(t *testing.T) {
	lrs := func(items ...corev1.LimitRangeItem) limitrange.Merged {
		return limitrange.Merge([]*corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: items}}})
	}
	tests := map[string]struct {
		pod          *corev1.Pod
		vpa          *vpav1.VerticalPodAutoscaler
		lr           limitrange.Merged
		want         []ContainerResources
		wantConflict string // part of the conflict's message; "" for none
		wantOverride bool
	}{
		"admissible: upstream's order": {
			pod:  pod(container("a", rl("100m", ""), rl("200m", ""))),
			vpa:  vpaWith(nil, recs(target("a", rl("300m", "")))),
			lr:   lrs(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("1", "")}),
			want: []ContainerResources{{Requests: rl("300m", ""), Limits: rl("600m", "")}},
		},
		"minAllowed above the LimitRange max: the LimitRange wins": {
			// Upstream applies minAllowed last: 2 cores, limit 2, refused
			// by the API server for every pod of the workload.
			pod:          pod(container("a", rl("100m", ""), rl("100m", ""))),
			vpa:          vpaWith(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MinAllowed: rl("2", "")}), recs(target("a", rl("300m", "")))),
			lr:           lrs(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("1", "")}),
			want:         []ContainerResources{{Requests: rl("1", ""), Limits: rl("1", ""), Notes: []string{"cpu capped to minAllowed", "cpu capped to fit Max in container LimitRange"}}},
			wantConflict: "maximum cpu usage per Container is 1, but limit is 2",
			wantOverride: true,
		},
		"no patch fits: the pod is left as it is": {
			// b is in mode Off and alone exceeds the pod max with a.
			pod: pod(container("a", rl("500m", ""), rl("500m", "")), container("b", rl("2", ""), rl("2", ""))),
			vpa: vpaWith(policy(vpav1.ContainerResourcePolicy{ContainerName: "b", Mode: ptr(vpav1.ContainerScalingModeOff)}),
				recs(target("a", rl("300m", "")))),
			lr:           lrs(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("1", "")}),
			want:         []ContainerResources{{}, {}},
			wantConflict: "maximum cpu usage per Pod is 1, but limit is 2300m",
		},
		"the ratio limit is checked": {
			pod:          pod(container("a", rl("100m", ""), rl("400m", ""))),
			vpa:          vpaWith(nil, recs(target("a", rl("200m", "")))),
			lr:           lrs(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("2", "")}),
			want:         []ContainerResources{{}},
			wantConflict: "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := PlanForPod(tc.pod, tc.vpa, tc.lr)
			if len(got.Containers) != len(tc.want) {
				t.Fatalf("got %d entries, want %d", len(got.Containers), len(tc.want))
			}
			for i := range got.Containers {
				g, w := got.Containers[i], tc.want[i]
				if !equalLists(g.Requests, w.Requests) || !equalLists(g.Limits, w.Limits) || !reflect.DeepEqual(g.Notes, w.Notes) {
					t.Errorf("container %d: got %v / %v %q, want %v / %v %q", i, g.Requests, g.Limits, g.Notes, w.Requests, w.Limits, w.Notes)
				}
			}
			switch {
			case tc.wantConflict == "" && got.Conflict != nil:
				t.Errorf("conflict %v, want none", got.Conflict)
			case tc.wantConflict != "" && (got.Conflict == nil || !strings.Contains(got.Conflict.Error(), tc.wantConflict)):
				t.Errorf("conflict %v, want one saying %q", got.Conflict, tc.wantConflict)
			}
			if got.PolicyOverridden != tc.wantOverride {
				t.Errorf("PolicyOverridden = %v, want %v", got.PolicyOverridden, tc.wantOverride)
			}
			if got.Conflict == nil || got.PolicyOverridden {
				if err := Admissible(tc.pod, got.Containers, tc.lr.Items); err != nil {
					t.Errorf("the plan is not admissible: %v", err)
				}
			}
		})
	}
}

// TestPlanForPodLevelResources: containers may not request more in total
// than the pod-level resources, LimitRanges or not.
func TestPlanForPodLevelResources(t *testing.T) {
	p := pod(container("a", rl("200m", ""), nil), container("b", rl("200m", ""), nil))
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("500m", "")}
	plan := PlanForPod(p, vpaWith(nil, recs(target("a", rl("400m", "")))), limitrange.Merged{})
	if plan.Changed() || plan.Conflict == nil || !strings.Contains(plan.Conflict.Error(), "must be greater than or equal to aggregate container requests of 600m") {
		t.Errorf("plan = %+v, want no change and the conflict", plan)
	}
	plan = PlanForPod(p, vpaWith(nil, recs(target("a", rl("300m", "")))), limitrange.Merged{})
	if !plan.Changed() || plan.Conflict != nil {
		t.Errorf("plan = %+v, want the recommendation", plan)
	}
}
