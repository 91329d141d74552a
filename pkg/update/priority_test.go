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

package update

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/openvpa/openvpa/pkg/testbuild"
)

func rl(cpu, mem string) corev1.ResourceList { return testbuild.Resources(cpu, mem) }

func dur(d time.Duration) *time.Duration { return &d }

// container with request, target and bounds.
func ctr(req, lower, target, upper corev1.ResourceList) ContainerInput {
	return ContainerInput{Name: "c", Requests: req, HasRecommendation: true, LowerBound: lower, Target: target, UpperBound: upper}
}

func TestDecide(t *testing.T) {
	old := dur(13 * time.Hour)
	young := dur(time.Hour)
	tests := map[string]struct {
		in   PodInput
		cfg  *Thresholds
		want Decision
	}{
		// §3.3 row 3: request below lowerBound is outside the range, even for a young pod.
		"request below lower bound": {
			in:   PodInput{Age: young, Containers: []ContainerInput{ctr(rl("100m", ""), rl("150m", ""), rl("200m", ""), rl("300m", ""))}},
			want: Decision{Update: true, Reason: ReasonOutsideRange, ScaleUp: true, OutsideRecommendedRange: true, ResourceDiff: 1},
		},
		"request above upper bound is a scale-down outside the range": {
			in:   PodInput{Age: young, Containers: []ContainerInput{ctr(rl("400m", ""), rl("150m", ""), rl("200m", ""), rl("300m", ""))}},
			want: Decision{Update: true, Reason: ReasonOutsideRange, OutsideRecommendedRange: true, ResourceDiff: 0.5},
		},
		"request equal to the bounds is inside the range": {
			in:   PodInput{Age: young, Containers: []ContainerInput{ctr(rl("150m", ""), rl("150m", ""), rl("200m", ""), rl("150m", ""))}},
			want: Decision{Reason: ReasonTooYoung, ScaleUp: true, ResourceDiff: 50.0 / 150},
		},
		"missing bounds are not checked": {
			in:   PodInput{Age: young, Containers: []ContainerInput{ctr(rl("100m", ""), nil, rl("200m", ""), nil)}},
			want: Decision{Reason: ReasonTooYoung, ScaleUp: true, ResourceDiff: 1},
		},
		// §3.3 row 3: a recommended resource without a request is both scale-up and outside range.
		"no request for a recommended resource": {
			in:   PodInput{Age: young, Containers: []ContainerInput{ctr(rl("200m", ""), rl("100m", "100Mi"), rl("200m", "200Mi"), rl("300m", "300Mi"))}},
			want: Decision{Update: true, Reason: ReasonOutsideRange, ScaleUp: true, OutsideRecommendedRange: true, ResourceDiff: float64(200*1024*1024*1000 - 1)},
		},
		"container without recommendation is ignored": {
			in: PodInput{Age: old, Containers: []ContainerInput{
				{Name: "side", Requests: rl("1m", "")},
				ctr(rl("200m", ""), rl("100m", ""), rl("200m", ""), rl("300m", "")),
			}},
			want: Decision{Reason: ReasonBelowThreshold},
		},
		"resources not in the target are ignored": {
			in:   PodInput{Age: young, Containers: []ContainerInput{ctr(rl("200m", "1Mi"), rl("100m", ""), rl("200m", ""), rl("300m", ""))}},
			want: Decision{Reason: ReasonTooYoung},
		},
		// §3.3 row 3: ResourceDiff sums per-resource relative differences of totals over containers.
		"diff sums totals over containers and resources": {
			in: PodInput{Age: old, Containers: []ContainerInput{
				ctr(rl("100m", "100Mi"), rl("50m", "50Mi"), rl("150m", "100Mi"), rl("500m", "500Mi")),
				ctr(rl("100m", "100Mi"), rl("50m", "50Mi"), rl("150m", "150Mi"), rl("500m", "500Mi")),
			}},
			// cpu: |200-300|/200 = 0.5; memory: |200Mi-250Mi|/200Mi = 0.25
			want: Decision{Update: true, Reason: ReasonLongLivedDrift, ScaleUp: true, ResourceDiff: 0.75},
		},
		"zero request counts as one milli-unit": {
			in:   PodInput{Age: old, Containers: []ContainerInput{ctr(rl("0", ""), nil, rl("2m", ""), nil)}},
			want: Decision{Update: true, Reason: ReasonLongLivedDrift, ScaleUp: true, ResourceDiff: 1},
		},
		// §3.3 row 5: inside the range the pod needs a start time, the lifetime and the threshold.
		"inside range, no start time": {
			in:   PodInput{Containers: []ContainerInput{ctr(rl("100m", ""), rl("50m", ""), rl("200m", ""), rl("300m", ""))}},
			want: Decision{Reason: ReasonNoStartTime, ScaleUp: true, ResourceDiff: 1},
		},
		"inside range, younger than the lifetime threshold": {
			in:   PodInput{Age: dur(12*time.Hour - time.Second), Containers: []ContainerInput{ctr(rl("100m", ""), rl("50m", ""), rl("200m", ""), rl("300m", ""))}},
			want: Decision{Reason: ReasonTooYoung, ScaleUp: true, ResourceDiff: 1},
		},
		"inside range, exactly the lifetime threshold": {
			in:   PodInput{Age: dur(12 * time.Hour), Containers: []ContainerInput{ctr(rl("100m", ""), rl("50m", ""), rl("200m", ""), rl("300m", ""))}},
			want: Decision{Update: true, Reason: ReasonLongLivedDrift, ScaleUp: true, ResourceDiff: 1},
		},
		"inside range, old, change below threshold": {
			in:   PodInput{Age: old, Containers: []ContainerInput{ctr(rl("1000m", ""), rl("500m", ""), rl("1090m", ""), rl("2", ""))}},
			want: Decision{Reason: ReasonBelowThreshold, ScaleUp: true, ResourceDiff: 0.09},
		},
		"inside range, old, change exactly the threshold": {
			in:   PodInput{Age: old, Containers: []ContainerInput{ctr(rl("1000m", ""), rl("500m", ""), rl("900m", ""), rl("2", ""))}},
			want: Decision{Update: true, Reason: ReasonLongLivedDrift, ResourceDiff: 0.1},
		},
		"custom thresholds": {
			cfg:  &Thresholds{PodUpdateThreshold: 0.5, PodLifetimeUpdateThreshold: time.Minute, EvictAfterOOMThreshold: time.Minute},
			in:   PodInput{Age: dur(2 * time.Minute), Containers: []ContainerInput{ctr(rl("1000m", ""), rl("500m", ""), rl("1400m", ""), rl("2", ""))}},
			want: Decision{Reason: ReasonBelowThreshold, ScaleUp: true, ResourceDiff: 0.4},
		},
		// §3.3 row 4: quick OOM.
		"quick OOM of a young pod with a change": {
			in: PodInput{Age: young, Containers: []ContainerInput{func() ContainerInput {
				c := ctr(rl("", "100Mi"), rl("", "50Mi"), rl("", "120Mi"), rl("", "200Mi"))
				c.OOMKilledAfter = dur(9 * time.Minute)
				return c
			}()}},
			want: Decision{Update: true, Reason: ReasonQuickOOM, QuickOOM: true, ScaleUp: true, ResourceDiff: 0.2},
		},
		"OOM after the threshold is not quick": {
			in: PodInput{Age: young, Containers: []ContainerInput{func() ContainerInput {
				c := ctr(rl("", "100Mi"), rl("", "50Mi"), rl("", "120Mi"), rl("", "200Mi"))
				c.OOMKilledAfter = dur(10 * time.Minute)
				return c
			}()}},
			want: Decision{Reason: ReasonTooYoung, ScaleUp: true, ResourceDiff: 0.2},
		},
		"quick OOM of a container with scaling mode Off does not count": {
			in: PodInput{Age: young, Containers: []ContainerInput{
				ctr(rl("", "100Mi"), rl("", "50Mi"), rl("", "120Mi"), rl("", "200Mi")),
				{Name: "off", ScalingOff: true, OOMKilledAfter: dur(time.Second)},
			}},
			want: Decision{Reason: ReasonTooYoung, ScaleUp: true, ResourceDiff: 0.2},
		},
		"quick OOM of a container without recommendation counts": {
			in: PodInput{Age: young, Containers: []ContainerInput{
				ctr(rl("", "100Mi"), rl("", "50Mi"), rl("", "120Mi"), rl("", "200Mi")),
				{Name: "norec", OOMKilledAfter: dur(time.Second)},
			}},
			want: Decision{Update: true, Reason: ReasonQuickOOM, QuickOOM: true, ScaleUp: true, ResourceDiff: 0.2},
		},
		"quick OOM with no change is dropped": {
			in: PodInput{Age: old, Containers: []ContainerInput{func() ContainerInput {
				c := ctr(rl("", "100Mi"), rl("", "50Mi"), rl("", "100Mi"), rl("", "200Mi"))
				c.OOMKilledAfter = dur(time.Minute)
				return c
			}()}},
			want: Decision{Reason: ReasonNoChange, QuickOOM: true},
		},
		"quick OOM with no change is dropped even outside the range": {
			in: PodInput{Age: old, Containers: []ContainerInput{func() ContainerInput {
				c := ctr(rl("", "100Mi"), rl("", "150Mi"), rl("", "100Mi"), rl("", "200Mi"))
				c.OOMKilledAfter = dur(time.Minute)
				return c
			}()}},
			want: Decision{Reason: ReasonNoChange, QuickOOM: true, OutsideRecommendedRange: true},
		},
		"per-VPA OOM threshold": {
			cfg: &Thresholds{PodUpdateThreshold: 0.1, PodLifetimeUpdateThreshold: 12 * time.Hour, EvictAfterOOMThreshold: 30 * time.Minute},
			in: PodInput{Age: young, Containers: []ContainerInput{func() ContainerInput {
				c := ctr(rl("", "100Mi"), rl("", "50Mi"), rl("", "120Mi"), rl("", "200Mi"))
				c.OOMKilledAfter = dur(20 * time.Minute)
				return c
			}()}},
			want: Decision{Update: true, Reason: ReasonQuickOOM, QuickOOM: true, ScaleUp: true, ResourceDiff: 0.2},
		},
		"no containers": {
			in:   PodInput{Age: old},
			want: Decision{Reason: ReasonBelowThreshold},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultThresholds()
			if tc.cfg != nil {
				cfg = *tc.cfg
			}
			got := Decide(cfg, tc.in)
			if diff := got.ResourceDiff - tc.want.ResourceDiff; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("ResourceDiff = %v, want %v", got.ResourceDiff, tc.want.ResourceDiff)
			}
			got.ResourceDiff = tc.want.ResourceDiff
			if got != tc.want {
				t.Errorf("Decide() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSortOrder(t *testing.T) {
	type pod struct {
		name string
		d    Decision
	}
	tests := map[string]struct {
		in   []pod
		want []string
	}{
		// §3.3 row 6: scale-ups first, then larger ResourceDiff.
		"scale-up before larger scale-down": {
			in:   []pod{{"down", Decision{ResourceDiff: 5}}, {"up", Decision{ScaleUp: true, ResourceDiff: 0.2}}},
			want: []string{"up", "down"},
		},
		"larger diff first among scale-ups": {
			in:   []pod{{"small", Decision{ScaleUp: true, ResourceDiff: 0.2}}, {"big", Decision{ScaleUp: true, ResourceDiff: 0.9}}},
			want: []string{"big", "small"},
		},
		"larger diff first among scale-downs": {
			in:   []pod{{"small", Decision{ResourceDiff: 0.2}}, {"big", Decision{ResourceDiff: 0.9}}},
			want: []string{"big", "small"},
		},
		"ties keep input order": {
			in:   []pod{{"a", Decision{ResourceDiff: 0.5}}, {"b", Decision{ResourceDiff: 0.5}}, {"c", Decision{ScaleUp: true}}},
			want: []string{"c", "a", "b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			SortByPriority(tc.in, func(p pod) Decision { return p.d })
			var got []string
			for _, p := range tc.in {
				got = append(got, p.name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
