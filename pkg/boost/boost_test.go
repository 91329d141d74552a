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

package boost

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func ptr[T any](v T) *T { return &v }

func TestBoosted(t *testing.T) {
	q := resource.MustParse
	cases := map[string]struct {
		base    string
		boost   vpav1.GenericStartupBoost
		max     string
		want    string
		wantErr bool
	}{
		"factor":                  {base: "150m", boost: vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(3))}, want: "450m"},
		"factor of whole cores":   {base: "2", boost: vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2))}, want: "4"},
		"quantity added":          {base: "150m", boost: vpav1.GenericStartupBoost{Type: vpav1.QuantityStartupBoostType, Quantity: ptr(q("1"))}, want: "1150m"},
		"capped by max":           {base: "1", boost: vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(8))}, max: "3", want: "3"},
		"under max kept":          {base: "100m", boost: vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2))}, max: "3", want: "200m"},
		"empty type is a factor":  {base: "100m", boost: vpav1.GenericStartupBoost{Factor: ptr(int32(2))}, want: "200m"},
		"factor below one":        {base: "100m", boost: vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(0))}, wantErr: true},
		"factor missing":          {base: "100m", boost: vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType}, wantErr: true},
		"quantity missing":        {base: "100m", boost: vpav1.GenericStartupBoost{Type: vpav1.QuantityStartupBoostType}, wantErr: true},
		"unknown type":            {base: "100m", boost: vpav1.GenericStartupBoost{Type: "Double"}, wantErr: true},
		"sub-millicore truncated": {base: "100m", boost: vpav1.GenericStartupBoost{Type: vpav1.QuantityStartupBoostType, Quantity: ptr(q("0.5m"))}, want: "101m"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var max resource.Quantity
			if tc.max != "" {
				max = q(tc.max)
			}
			got, err := Boosted(q(tc.base), &tc.boost, max)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if err == nil && got.Cmp(q(tc.want)) != 0 {
				t.Errorf("got %s, want %s", got.String(), tc.want)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	vpa := &vpav1.VerticalPodAutoscaler{Spec: vpav1.VerticalPodAutoscalerSpec{
		StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2)), DurationSeconds: ptr(int32(30))}},
		ResourcePolicy: &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{
			{ContainerName: "quick", StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2)), DurationSeconds: ptr(int32(0))}}},
		}},
	}}
	pod := func(ready bool, since time.Duration) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation("app"): "{}", Annotation("quick"): "{}", "other": "x"}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-since))},
			}},
		}
	}
	cases := map[string]struct {
		pod           *corev1.Pod
		want          []string
		wantRemaining time.Duration
	}{
		"not ready":                         {pod: pod(false, time.Hour)},
		"ready: zero duration ends at once": {pod: pod(true, 0), want: []string{"quick"}, wantRemaining: 30 * time.Second},
		"ready past the duration":           {pod: pod(true, 31*time.Second), want: []string{"app", "quick"}},
		"ready within the duration":         {pod: pod(true, 10*time.Second), want: []string{"quick"}, wantRemaining: 20 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, remaining := Expired(tc.pod, vpa, now)
			set := map[string]bool{}
			for _, n := range got {
				set[n] = true
			}
			if len(set) != len(tc.want) {
				t.Fatalf("expired %v, want %v", got, tc.want)
			}
			for _, n := range tc.want {
				if !set[n] {
					t.Errorf("expired %v, want %v", got, tc.want)
				}
			}
			if remaining != tc.wantRemaining {
				t.Errorf("remaining %v, want %v", remaining, tc.wantRemaining)
			}
		})
	}
}

func TestPolicyFor(t *testing.T) {
	pod := &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2))}}
	own := &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(5))}}
	vpa := &vpav1.VerticalPodAutoscaler{Spec: vpav1.VerticalPodAutoscalerSpec{StartupBoost: pod,
		ResourcePolicy: &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{
			{ContainerName: "own", StartupBoost: own},
			{ContainerName: "off", Mode: ptr(vpav1.ContainerScalingModeOff)},
		}}}}
	if got := PolicyFor(vpa, "own"); got != own.CPU {
		t.Errorf("own: %v", got)
	}
	if got := PolicyFor(vpa, "plain"); got != pod.CPU {
		t.Errorf("plain: %v", got)
	}
	if got := PolicyFor(vpa, "off"); got != nil {
		t.Errorf("off: %v", got)
	}
	if !Configured(vpa) || Configured(&vpav1.VerticalPodAutoscaler{}) {
		t.Error("Configured")
	}
}

func TestEncodeDecode(t *testing.T) {
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "example.com/gpu": resource.MustParse("1")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	v := Encode(r)
	if want := `{"requests":{"cpu":"100m"},"limits":{"memory":"1Gi"}}`; v != want {
		t.Errorf("Encode = %s, want %s", v, want)
	}
	o, err := Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	if q := o.Requests[corev1.ResourceCPU]; q.String() != "100m" {
		t.Errorf("decoded %v", o)
	}
	if _, err := Decode("{"); err == nil {
		t.Error("a broken value decoded")
	}
}
