package estimator

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
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
