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
	"math"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/model"
)

// TestExplainSteps: the steps compose to what Estimate returns, with the
// upstream arithmetic at each step.
func TestExplainSteps(t *testing.T) {
	a := cpuAggregate(time.Minute, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)
	p := NewPercentile(DefaultConfig())
	minimum := DefaultConfig().PodMinimum(1)
	b := p.Explain(a, minimum)
	if got, want := b.Amounts(), p.Estimate(a, minimum); got != want {
		t.Fatalf("Explain(...).Amounts() = %+v, Estimate = %+v", got, want)
	}
	s := b.CPU.LowerBound
	if s.Percentile != 0.5 || s.WithMargin != withMargin(s.Raw, 0.15) || s.Confidence != a.Confidence(24*time.Hour) ||
		s.WithConfidence != withConfidence(s.WithMargin, s.Confidence, 0.001, -2) || s.Final != max(s.WithConfidence, minimum.CPU) {
		t.Errorf("cpu lower bound steps %+v do not follow the formula", s)
	}
	if tg := b.CPU.Target; tg.Confidence != 0 || tg.WithConfidence != tg.WithMargin {
		t.Errorf("a target is not scaled by confidence: %+v", tg)
	}
	if m := b.Memory.Target; m.Raw != 0 || m.Final != minimum.Memory {
		t.Errorf("memory without peaks: %+v, want the pod minimum %d", m, minimum.Memory)
	}
}

// explainHistories are the histories TestExplainEveryEstimator explains,
// each built on the model configuration of the estimator called name.
var explainHistories = map[string]func(t *testing.T, name string) *model.AggregateState{
	"none": func(_ *testing.T, name string) *model.AggregateState {
		cfg := ModelConfig(name, *model.DefaultConfig())
		return model.NewAggregateState(&cfg, start)
	},
	// Three days at 0 bytes (a container that reports no usage), then
	// three at 400 MB: the older half of the peaks read 0.
	"zero readings": func(_ *testing.T, name string) *model.AggregateState {
		return samples(name, 6*24*60, time.Minute, func(i int) float64 {
			if i < 3*24*60 {
				return 0
			}
			return 4e8
		})
	},
	"steady": func(_ *testing.T, name string) *model.AggregateState {
		return samples(name, 3*24*60, time.Minute, func(int) float64 { return 300 << 20 })
	},
	// Ten days at 1e9 B, then two OOM kills five minutes apart, at requests
	// of 1.2e9 and 1.6e9 B.
	"OOM kills after ten days": func(t *testing.T, name string) *model.AggregateState {
		a := samples(name, 10*24*12, 5*time.Minute, func(int) float64 { return 1e9 })
		c := model.NewContainerState(a)
		last := a.LastSampleStart
		for i, request := range []float64{1.2e9, 1.6e9} {
			ts := last.Add(time.Duration(i+1) * 5 * time.Minute)
			c.AddCPUSample(ts, 300)
			if err := c.RecordOOM(ts, model.MemoryAmountFromBytes(request)); err != nil {
				t.Fatal(err)
			}
		}
		return a
	},
}

// samples returns n samples every period of 300m CPU and mem(i) bytes, on
// the model configuration of the estimator called name.
func samples(name string, n int, every time.Duration, mem func(i int) float64) *model.AggregateState {
	cfg := ModelConfig(name, *model.DefaultConfig())
	a := model.NewAggregateState(&cfg, start)
	c := model.NewContainerState(a)
	for i := range n {
		ts := start.Add(time.Duration(i) * every)
		c.AddCPUSample(ts, 300)
		c.AddMemorySample(ts, model.MemoryAmountFromBytes(mem(i)))
	}
	return a
}

// TestExplainEveryEstimator: for every estimator New builds and every
// history, the steps compose to what Estimate returns; the memory rows of
// the estimators with a memory rule start at the peak the target covers and
// end at the rule's amounts, and the rule's parts add up.
func TestExplainEveryEstimator(t *testing.T) {
	opts := DefaultOptions()
	minimum := opts.Config.PodMinimum(1)
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Abs(want) }
	for _, name := range Names() {
		for history, build := range explainHistories {
			t.Run(name+"/"+history, func(t *testing.T) {
				a := build(t, name)
				e, err := New(name, opts)
				if err != nil {
					t.Fatal(err)
				}
				b := e.Explain(a, minimum)
				if got, want := b.Amounts(), e.Estimate(a, minimum); got != want {
					t.Fatalf("Explain(...).Amounts() = %+v, Estimate = %+v", got, want)
				}
				r := b.MemoryRule
				if name == PercentileName {
					if r != nil {
						t.Errorf("the percentile chain has a memory rule: %+v", r)
					}
					return
				}
				if r == nil {
					t.Fatal("no memory rule")
				}
				peak, pct := r.Peak()
				for _, row := range []struct {
					name   string
					step   Step
					amount model.ResourceAmount
				}{{"target", b.Memory.Target, r.Target}, {"lower", b.Memory.LowerBound, r.Lower}, {"upper", b.Memory.UpperBound, r.Upper}} {
					s := row.step
					if s.Raw != model.MemoryAmountFromBytes(peak) || s.Percentile != pct {
						t.Errorf("memory %s starts at %d (P%v), want the covered peak %.0f (P%v)", row.name, s.Raw, s.Percentile*100, peak, pct*100)
					}
					if s.WithConfidence != row.amount || s.Final != max(row.amount, minimum.Memory) || s.Confidence != 0 {
						t.Errorf("memory %s = %+v, want to end at the rule's %d, at least %d", row.name, s, row.amount, minimum.Memory)
					}
				}
				if !near(r.Level*(1+r.Margin), r.Covered) {
					t.Errorf("level %.0f × (1 + margin %v) = %.0f, but covered is %.0f", r.Level, r.Margin, r.Level*(1+r.Margin), r.Covered)
				}
				switch history {
				case "none":
					if *r != (MemoryRule{}) {
						t.Errorf("rule without peaks = %+v, want zero", r)
					}
				case "zero readings":
					// The zero days are days 4 to 6 back: 1/8 of the
					// weight of the days 1 to 3 back, 1/9 of the total.
					factor := opts.Peak.MemoryZeroFactor
					if name == AdaptiveName {
						factor = opts.Adaptive.MemoryZeroFactor
					}
					if math.Abs(r.ZeroShare-1.0/9) > 1e-6 || r.ZeroMargin != factor*r.ZeroShare/(1-r.ZeroShare) {
						t.Errorf("zero share %v, zero margin %v; want 1/9 and %v × z/(1 − z)", r.ZeroShare, r.ZeroMargin, factor)
					}
				}
				switch name {
				case PeakName:
					c := opts.Peak
					if want := min(r.BaseMargin+r.VariabilityMargin+r.YoungMargin+r.ZeroMargin, c.MemoryMaxMargin); !near(r.Margin, want) {
						t.Errorf("margin %v, parts %+v add up to %v", r.Margin, r, want)
					}
					if d := float64(r.Target) - r.Covered; r.Level > 0 && (d > 2 || d < -2) {
						t.Errorf("target %d, covered %.0f", r.Target, r.Covered)
					}
				case AdaptiveName:
					c := opts.Adaptive
					if history == "none" {
						return
					}
					if r.ZeroShare < 1 {
						if want := len(c.MemoryHorizons) * len(c.MemoryMargins); r.Arms != want {
							t.Errorf("%d arms scored, want %d", r.Arms, want)
						}
						if want := r.Headroom + c.MemoryOverrunCost*r.Overrun; r.Cost != want {
							t.Errorf("arm cost %v, want headroom %v + %v × overrun %v = %v", r.Cost, r.Headroom, c.MemoryOverrunCost, r.Overrun, want)
						}
						if want := 1 - r.Typical/r.Covered; r.Headroom != want {
							t.Errorf("headroom %v, want 1 − typical/covered = %v", r.Headroom, want)
						}
						if want := r.BaseMargin + min(r.YoungMargin+r.ZeroMargin, c.MemoryMaxExtraMargin); !near(r.Margin, want) {
							t.Errorf("margin %v, parts %+v add up to %v", r.Margin, r, want)
						}
					}
					j := r.Jump
					if j.Found && !near(j.Top*(1+j.Margin), j.Covered) {
						t.Errorf("jump %+v: top × (1 + margin) is not covered", j)
					}
					switch {
					case history == "OOM kills after ten days":
						if !j.Found || !j.Raised || j.Top <= 1.6e9 || j.Prior > 1.1e9 || r.Target != model.MemoryAmountFromBytes(j.Covered) {
							t.Errorf("after two kills: jump %+v, target %d; want the jump above the 1e9 B peaks to set the target", j, r.Target)
						}
					case j.Raised:
						t.Errorf("%s: jump %+v sets the target", history, j)
					case r.Target != model.MemoryAmountFromBytes(r.Covered):
						t.Errorf("target %d, want the arm's %.0f", r.Target, r.Covered)
					}
				}
			})
		}
	}
}

func TestClips(t *testing.T) {
	q := resource.MustParse
	uncapped := corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("100Mi")}
	policy := func(p vpav1.ContainerResourcePolicy) *vpav1.PodResourcePolicy {
		return &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{p}}
	}
	tests := map[string]struct {
		policy *vpav1.PodResourcePolicy
		global corev1.ResourceList
		want   []Clip
	}{
		"no limits": {},
		"maxAllowed cpu, minAllowed memory": {
			policy: policy(vpav1.ContainerResourcePolicy{ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: q("1")},
				MinAllowed: corev1.ResourceList{corev1.ResourceMemory: q("200Mi")}}),
			want: []Clip{{Resource: corev1.ResourceCPU, Limit: LimitMaxAllowed, Value: q("1")}, {Resource: corev1.ResourceMemory, Limit: LimitMinAllowed, Value: q("200Mi")}},
		},
		"the global maximum where the policy names none": {
			policy: policy(vpav1.ContainerResourcePolicy{ContainerName: "app", MaxAllowed: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}),
			global: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("50Mi")},
			want:   []Clip{{Resource: corev1.ResourceCPU, Limit: LimitGlobalMax, Value: q("500m")}},
		},
		"another container's policy": {
			policy: policy(vpav1.ContainerResourcePolicy{ContainerName: "sidecar", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: q("1")}}),
		},
		"limits that do not bite": {
			policy: policy(vpav1.ContainerResourcePolicy{ContainerName: "app", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: q("4")}}),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MaxAllowed = tc.global
			got := cfg.Clips("app", tc.policy, uncapped)
			if len(got) != len(tc.want) {
				t.Fatalf("Clips = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Resource != tc.want[i].Resource || got[i].Limit != tc.want[i].Limit || got[i].Value.Cmp(tc.want[i].Value) != 0 {
					t.Errorf("Clips[%d] = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			// Finish caps the target to the same values.
			raw := map[string]Amounts{"app": {Target: Resources{CPU: 2000, Memory: 100 << 20}}}
			rec := Finish(cfg, raw, tc.policy, nil)[0]
			for _, c := range got {
				if v := rec.Target[c.Resource]; v.Cmp(c.Value) != 0 {
					t.Errorf("Finish gives %s %s, Clips says %s", c.Resource, v.String(), c.Value.String())
				}
			}
			if len(got) == 0 && !reflect.DeepEqual(quantities(rec.Target), quantities(rec.UncappedTarget)) {
				t.Errorf("no clip, but Finish capped: %v vs %v", rec.Target, rec.UncappedTarget)
			}
		})
	}
}

func quantities(l corev1.ResourceList) map[corev1.ResourceName]string {
	out := map[corev1.ResourceName]string{}
	for k, v := range l {
		out[k] = v.String()
	}
	return out
}
