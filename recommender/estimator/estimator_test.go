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

package estimator

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/model"
)

var start = time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)

// cpuAggregate returns an aggregate with CPU samples of the given millicores,
// spaced by every.
func cpuAggregate(every time.Duration, millicores ...model.ResourceAmount) *model.AggregateState {
	a := model.NewAggregateState(nil, start)
	c := model.NewContainerState(a)
	for i, m := range millicores {
		c.AddCPUSample(start.Add(time.Duration(i)*every), m)
	}
	return a
}

func TestPercentileOfSamples(t *testing.T) {
	cpu := cpuAggregate(time.Minute, 1000, 2000, 3000)
	mem := model.NewAggregateState(nil, start)
	for i, b := range []model.ResourceAmount{1e9, 2e9, 3e9} {
		model.NewContainerState(mem).AddMemorySample(start.Add(time.Duration(i)*time.Minute), b)
	}
	tests := map[string]struct {
		got, want float64
	}{
		"{1,2,3} cores at P20 is about 1 core": {cpu.CPU.Percentile(0.2), 1.0},
		"{1e9,2e9,3e9} bytes at P50 about 2e9": {mem.Memory.Percentile(0.5), 2e9},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if math.Abs(tc.got-tc.want) > 0.05*tc.want {
				t.Errorf("got %v, want %v ± 5%%", tc.got, tc.want)
			}
		})
	}
}

func TestChainSteps(t *testing.T) {
	nine := cpuAggregate(2*time.Minute, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	tests := map[string]struct {
		got, want model.ResourceAmount
	}{
		"no history: upper bound saturates":              {withConfidence(3140, 0, 1, 1), model.MaxResourceAmount},
		"no history: lower bound is 0":                   {withConfidence(3140, 0, 0.001, -2), 0},
		"no samples: 0 × ∞ is 0":                         {withConfidence(0, 0, 1, 1), 0},
		"conf 0.00625, (0.1, 2) on 3.14 cores":           {withConfidence(3140, nine.Confidence(24*time.Hour), 0.1, 2), 907460},
		"conf 0.00625, (0.1, 2) on 3.14e9 bytes":         {withConfidence(3.14e9, nine.Confidence(24*time.Hour), 0.1, 2), 9.0746e11},
		"conf 0.5 (18m interval) on 3.14 cores":          {withConfidence(3140, nine.Confidence(18*time.Minute), 0.1, 2), 4521},
		"conf 0.5 (18m interval) on 3.14e9":              {withConfidence(3.14e9, nine.Confidence(18*time.Minute), 0.1, 2), 4.5216e9},
		"margin 0.1 on 3.14 cores":                       {withMargin(3140, 0.1), 3454},
		"margin 0.15 on 305m is 350m":                    {withMargin(305, 0.15), 350},
		"margin is added after clamping the scaled part": {withMargin(model.MaxResourceAmount, 0.15), model.MaxResourceAmount + model.MaxResourceAmount*15/100},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %d, want %d", tc.got, tc.want)
			}
		})
	}
	if got := nine.Confidence(24 * time.Hour); got != 0.00625 {
		t.Errorf("confidence of 9 samples 2 minutes apart = %v, want 0.00625", got)
	}
}

func TestPodMinimum(t *testing.T) {
	tests := map[string]struct {
		n    int
		want Resources
	}{
		"one container":    {1, Resources{CPU: 25, Memory: 250 * 1024 * 1024}},
		"two containers":   {2, Resources{CPU: 12, Memory: 125 * 1024 * 1024}},
		"three containers": {3, Resources{CPU: 8, Memory: 87381333}},
		"no containers":    {0, Resources{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := DefaultConfig().PodMinimum(tc.n); got != tc.want {
				t.Errorf("PodMinimum(%d) = %+v, want %+v", tc.n, got, tc.want)
			}
		})
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func list(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = q(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = q(mem)
	}
	return l
}

func sameList(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
		return
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || g.Cmp(w) != 0 {
			t.Errorf("%s[%s] = %s, want %s", what, name, g.String(), w.String())
		}
	}
}

func TestRecommend(t *testing.T) {
	empty := func() *model.AggregateState { return model.NewAggregateState(nil, start) }
	off := vpav1.ContainerScalingModeOff
	cpuOnly := []corev1.ResourceName{corev1.ResourceCPU}
	tests := map[string]struct {
		cfg         func(*Config)
		containers  []string
		policy      *vpav1.PodResourcePolicy
		annotations map[string]string
		want        map[string][4]corev1.ResourceList // target, lower, upper, uncapped
	}{
		"no history gives the pod minimum and a saturated upper bound": {
			containers: []string{"app"},
			want: map[string][4]corev1.ResourceList{"app": {
				list("25m", "250Mi"), list("25m", "250Mi"), list("25m", "250Mi"), list("25m", "250Mi"),
			}},
		},
		"minimum split across two containers": {
			containers: []string{"b", "a"},
			want: map[string][4]corev1.ResourceList{
				"a": {list("12m", "125Mi"), list("12m", "125Mi"), list("12m", "125Mi"), list("12m", "125Mi")},
				"b": {list("12m", "125Mi"), list("12m", "125Mi"), list("12m", "125Mi"), list("12m", "125Mi")},
			},
		},
		"containers with mode Off are left out and not counted": {
			containers: []string{"a", "sidecar"},
			policy:     &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{ContainerName: "sidecar", Mode: &off}}},
			want: map[string][4]corev1.ResourceList{
				"a": {list("25m", "250Mi"), list("25m", "250Mi"), list("25m", "250Mi"), list("25m", "250Mi")},
			},
		},
		"controlled resources filter": {
			containers: []string{"a"},
			policy:     &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{ContainerName: "*", ControlledResources: &cpuOnly}}},
			want: map[string][4]corev1.ResourceList{
				"a": {list("25m", ""), list("25m", ""), list("25m", ""), list("25m", "")},
			},
		},
		"rounding applies to target, bounds and uncapped target": {
			cfg:        func(c *Config) { c.RoundCPUMillicores = 50; c.RoundMemoryBytes = 134217728 },
			containers: []string{"a"},
			want: map[string][4]corev1.ResourceList{
				"a": {list("50m", "256Mi"), list("50m", "256Mi"), list("50m", "256Mi"), list("50m", "256Mi")},
			},
		},
		"humanized memory": {
			cfg:        func(c *Config) { c.HumanizeMemory = true; c.PodMinMemoryMb = 1537.0 / 1024 / 1024 },
			containers: []string{"a"},
			want: map[string][4]corev1.ResourceList{
				"a": {list("25m", "1.50Ki"), list("25m", "1.50Ki"), list("25m", "1.50Ki"), list("25m", "1.50Ki")},
			},
		},
		"capping to minAllowed and maxAllowed leaves the uncapped target": {
			containers: []string{"a"},
			policy: &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{
				ContainerName: "a", MinAllowed: list("100m", "0"), MaxAllowed: list("0", "200Mi"),
			}}},
			want: map[string][4]corev1.ResourceList{
				"a": {list("100m", "200Mi"), list("100m", "200Mi"), list("100m", "200Mi"), list("25m", "250Mi")},
			},
		},
		"global max applies where the policy names no limit": {
			cfg:        func(c *Config) { c.MaxAllowed = list("10m", "100Mi") },
			containers: []string{"a"},
			policy: &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{
				ContainerName: "a", MaxAllowed: list("", "200Mi"),
			}}},
			want: map[string][4]corev1.ResourceList{
				"a": {list("10m", "200Mi"), list("10m", "200Mi"), list("10m", "200Mi"), list("25m", "250Mi")},
			},
		},
		"integer CPU by annotation": {
			cfg:         func(c *Config) { c.CPUIntegerPostProcessorEnabled = true },
			containers:  []string{"a", "b"},
			annotations: map[string]string{"vpa-post-processor.kubernetes.io/a_integerCPU": "true"},
			want: map[string][4]corev1.ResourceList{
				"a": {list("1", "125Mi"), list("1", "125Mi"), list("1", "125Mi"), list("1", "125Mi")},
				"b": {list("12m", "125Mi"), list("12m", "125Mi"), list("12m", "125Mi"), list("12m", "125Mi")},
			},
		},
		"integer CPU annotation ignored when disabled": {
			containers:  []string{"a"},
			annotations: map[string]string{"vpa-post-processor.kubernetes.io/a_integerCPU": "true"},
			want: map[string][4]corev1.ResourceList{
				"a": {list("25m", "250Mi"), list("25m", "250Mi"), list("25m", "250Mi"), list("25m", "250Mi")},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			e, err := New(PercentileName, Options{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			aggs := map[string]*model.AggregateState{}
			for _, c := range tc.containers {
				aggs[c] = empty()
			}
			res := e.Recommend(aggs, tc.policy, tc.annotations)
			if len(res.Containers) != len(tc.want) {
				t.Fatalf("got %d containers, want %d", len(res.Containers), len(tc.want))
			}
			for i, r := range res.Containers {
				if i > 0 && res.Containers[i-1].ContainerName >= r.ContainerName {
					t.Errorf("containers not sorted by name")
				}
				w, ok := tc.want[r.ContainerName]
				if !ok {
					t.Fatalf("unexpected container %q", r.ContainerName)
				}
				sameList(t, r.ContainerName+" target", r.Target, w[0])
				sameList(t, r.ContainerName+" lowerBound", r.LowerBound, w[1])
				sameList(t, r.ContainerName+" upperBound", r.UpperBound, w[2])
				sameList(t, r.ContainerName+" uncappedTarget", r.UncappedTarget, w[3])
				if _, ok := res.Confidence[r.ContainerName]; !ok {
					t.Errorf("no confidence for %q", r.ContainerName)
				}
			}
		})
	}
}

func TestRoundingAndHumanize(t *testing.T) {
	tests := map[string]struct {
		got, want string
	}{
		"79m rounds to 100m":     {fmt.Sprint(roundUpToMultiple(79, 50)), "100"},
		"34m rounds to 50m":      {fmt.Sprint(roundUpToMultiple(34, 50)), "50"},
		"200Mi rounds to 256Mi":  {fmt.Sprint(roundUpToMultiple(200<<20, 134217728)), "268435456"},
		"80Mi rounds to 128Mi":   {fmt.Sprint(roundUpToMultiple(80<<20, 134217728)), "134217728"},
		"1537 bytes is 1.50Ki":   {HumanizeMemory(1537), "1.50Ki"},
		"1000 bytes stays plain": {HumanizeMemory(1000), "1000"},
		"3Gi":                    {HumanizeMemory(3 << 30), "3.00Gi"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %s, want %s", tc.got, tc.want)
			}
		})
	}
}

func TestHistoryRecommendation(t *testing.T) {
	// A day of 1-minute CPU samples at 300m, then 2 CPU cores for one hour:
	// the target stays on the steady level, the upper bound follows the spike.
	a := model.NewAggregateState(nil, start)
	c := model.NewContainerState(a)
	for i := 0; i < 25*60; i++ {
		m := model.ResourceAmount(300)
		if i >= 24*60 {
			m = 2000
		}
		c.AddCPUSample(start.Add(time.Duration(i)*time.Minute), m)
		c.AddMemorySample(start.Add(time.Duration(i)*time.Minute), 500<<20)
	}
	res := NewPercentile(DefaultConfig()).Recommend(map[string]*model.AggregateState{"app": a}, nil, nil)
	r := res.Containers[0]
	// 500Mi lies in bucket 26, [511134537.6, 546691264.5) bytes: 546691264 + 82003689 = 628694953.
	sameList(t, "target", r.Target, list("350m", "628694953"))
	if conf := res.Confidence["app"]; math.Abs(conf-24.0/24-59.0/1440) > 1e-9 {
		t.Errorf("confidence = %v, want about 1.04 days", conf)
	}
	upper := r.UpperBound[corev1.ResourceCPU]
	if upper.MilliValue() < 2000 {
		t.Errorf("upper bound cpu = %s, want above the 2-core spike", upper.String())
	}
}

func TestNewUnknownEstimator(t *testing.T) {
	if _, err := New("nope", DefaultOptions()); err == nil {
		t.Errorf("New(nope) succeeded")
	}
	bad := DefaultConfig()
	bad.TargetCPUPercentile = 2
	if _, err := New(PercentileName, Options{Config: bad, Peak: DefaultPeakConfig()}); err == nil {
		t.Errorf("New with percentile 2 succeeded")
	}
	for _, p := range []float64{0, 0.97} {
		o := DefaultOptions()
		o.Adaptive.CPUTargetPercentile = p
		if _, err := New(AdaptiveName, o); err == nil {
			t.Errorf("New(adaptive) with CPU target percentile %v (upper bound %v) succeeded", p, o.Config.UpperBoundCPUPercentile)
		}
	}
}

func TestModelConfig(t *testing.T) {
	for name, want := range map[string]bool{"": false, PercentileName: false, PeakName: true, AdaptiveName: true} {
		got := ModelConfig(name, *model.DefaultConfig())
		if got.ReplaceZeroPeak != want {
			t.Errorf("ModelConfig(%q).ReplaceZeroPeak = %v, want %v", name, got.ReplaceZeroPeak, want)
		}
		got.ReplaceZeroPeak = false
		if !reflect.DeepEqual(got, *model.DefaultConfig()) {
			t.Errorf("ModelConfig(%q) changed more than ReplaceZeroPeak: %+v", name, got)
		}
	}
}
