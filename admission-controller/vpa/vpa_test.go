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

package vpa

import (
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/features"
)

func ptr[T any](v T) *T { return &v }

func valid() *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{Spec: vpav1.VerticalPodAutoscalerSpec{
		TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: ptr(vpav1.UpdateModeRecreate)},
	}}
}

func with(f func(*vpav1.VerticalPodAutoscaler)) *vpav1.VerticalPodAutoscaler {
	v := valid()
	f(v)
	return v
}

func policy(p vpav1.ContainerResourcePolicy) func(*vpav1.VerticalPodAutoscaler) {
	return func(v *vpav1.VerticalPodAutoscaler) {
		v.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{p}}
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestAdmit(t *testing.T) {
	tests := map[string]struct {
		vpa, old    *vpav1.VerticalPodAutoscaler
		gates       string
		wantErr     string // substring of the aggregated error; "" means valid
		wantWarning bool
		wantDefault bool
	}{
		"valid":                        {vpa: valid()},
		"targetRef required on create": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.TargetRef = nil }), wantErr: "spec.targetRef: Required value"},
		"targetRef name required":      {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.TargetRef.Name = "" }), wantErr: "spec.targetRef.name: Required value"},
		"updatePolicy defaulted":       {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy = nil }), wantDefault: true},
		"updateMode required": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.UpdateMode = nil }),
			wantErr: "updateMode is required if UpdatePolicy is used"},
		"unknown updateMode": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
			v.Spec.UpdatePolicy.UpdateMode = ptr(vpav1.UpdateMode("Sometimes"))
		}),
			wantErr: `spec.updatePolicy.updateMode: Unsupported value: "Sometimes"`},
		"Auto warns": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.UpdateMode = ptr(vpav1.UpdateModeAuto) }), wantWarning: true},
		"InPlace with the gate off": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.UpdateMode = ptr(vpav1.UpdateModeInPlace) }),
			gates: "InPlace=false", wantErr: "spec.updatePolicy.updateMode: Forbidden"},
		"InPlace with the gate on (default)": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.UpdateMode = ptr(vpav1.UpdateModeInPlace) })},
		"minReplicas zero": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.MinReplicas = ptr(int32(0)) }),
			wantErr: "minReplicas has to be positive"},
		"evictAfterOOMSeconds without gate": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.EvictAfterOOMSeconds = ptr(int32(5)) }),
			wantErr: "spec.updatePolicy.evictAfterOOMSeconds: Forbidden"},
		"evictAfterOOMSeconds kept on update without gate": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.EvictAfterOOMSeconds = ptr(int32(5)) }),
			old: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.EvictAfterOOMSeconds = ptr(int32(3)) })},
		"evictAfterOOMSeconds zero with gate": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.EvictAfterOOMSeconds = ptr(int32(0)) }),
			gates: "PerVPAConfig=true", wantErr: "must be at least 1"},
		"containerName required": {vpa: with(policy(vpav1.ContainerResourcePolicy{})), wantErr: "spec.resourcePolicy.containerPolicies[0].containerName: Required value"},
		"bad container mode": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", Mode: ptr(vpav1.ContainerScalingMode("Sometimes"))})),
			wantErr: "containerPolicies[0].mode: Unsupported value"},
		"max below min": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MinAllowed: corev1.ResourceList{"cpu": q("1")}, MaxAllowed: corev1.ResourceList{"cpu": q("500m")}})),
			wantErr: "spec.resourcePolicy.containerPolicies[0].maxAllowed[cpu]: Invalid value"},
		"fractional millicores": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MinAllowed: corev1.ResourceList{"cpu": q("0.5m")}})),
			wantErr: "minAllowed[cpu]: Invalid value: \"500u\": cpu must be a whole number of millicores"},
		"fractional bytes": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MaxAllowed: corev1.ResourceList{"memory": q("1.5")}})),
			wantErr: "memory must be a whole number of bytes"},
		"mode Off with RequestsAndLimits": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", Mode: ptr(vpav1.ContainerScalingModeOff), ControlledValues: ptr(vpav1.ContainerControlledValuesRequestsAndLimits)})),
			wantErr: "controlledValues: Forbidden"},
		// Upstream 1.8 validates controlledResources: only cpu and memory,
		// a value already stored is kept with a warning (1.7 took anything).
		"unsupported controlledResources": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", ControlledResources: &[]corev1.ResourceName{"cpu", "gpu"}})),
			wantErr: `controlledResources[1]: Unsupported value: "gpu"`},
		"unsupported controlledResources already stored warns": {
			vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", ControlledResources: &[]corev1.ResourceName{"gpu"}})),
			old: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", ControlledResources: &[]corev1.ResourceName{"gpu"}})), wantWarning: true},
		"oomBumpUpRatio without gate": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", OOMBumpUpRatio: ptr(q("2"))})),
			wantErr: "oomBumpUpRatio: Forbidden"},
		"oomBumpUpRatio below 1": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", OOMBumpUpRatio: ptr(q("0.5"))})),
			gates: "PerVPAConfig=true", wantErr: "oomBumpUpRatio: Invalid value"},
		"memoryAggregationIntervalCount zero": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MemoryAggregationIntervalCount: ptr(int64(0))})),
			gates: "PerVPAConfig=true", wantErr: "memoryAggregationIntervalCount: Invalid value"},
		"startupBoost without gate": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
			v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2))}}
		}), wantErr: "spec.startupBoost: Forbidden"},
		"startupBoost factor below 1": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
			v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(0))}}
		}), gates: "CPUStartupBoost=true", wantErr: "spec.startupBoost.cpu.factor: Invalid value"},
		"startupBoost quantity missing": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
			v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.QuantityStartupBoostType}}
		}), gates: "CPUStartupBoost=true", wantErr: "spec.startupBoost.cpu.quantity: Required value"},
		"startupBoost unknown type": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
			v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: "Double"}}
		}), gates: "CPUStartupBoost=true", wantErr: "spec.startupBoost.cpu.type: Unsupported value"},
		"negative maxAllowed": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MaxAllowed: corev1.ResourceList{"cpu": q("-1"), "memory": q("-1Gi")}})),
			wantErr: `maxAllowed[cpu]: Invalid value: "-1": must not be negative`},
		"negative maxAllowed memory": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MaxAllowed: corev1.ResourceList{"memory": q("-1Gi")}})),
			wantErr: `maxAllowed[memory]: Invalid value: "-1Gi": must not be negative`},
		"negative minAllowed": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MinAllowed: corev1.ResourceList{"memory": q("-5")}})),
			wantErr: `minAllowed[memory]: Invalid value: "-5": must not be negative`},
		"negative extended resource": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MinAllowed: corev1.ResourceList{"example.com/gpu": q("-1")}})),
			wantErr: `must not be negative`},
		"zero maxAllowed is fine": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MaxAllowed: corev1.ResourceList{"cpu": q("0")}}))},
		"startupBoost negative quantity": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
			v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.QuantityStartupBoostType, Quantity: ptr(q("-500m"))}}
		}), gates: "CPUStartupBoost=true", wantErr: `spec.startupBoost.cpu.quantity: Invalid value: "-500m": must not be negative`},
		"container startupBoost negative quantity": {vpa: with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a",
			StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.QuantityStartupBoostType, Quantity: ptr(q("-1"))}}})),
			gates: "CPUStartupBoost=true", wantErr: `containerPolicies[0].startupBoost.cpu.quantity: Invalid value: "-1": must not be negative`},
		"container startupBoost added over a pod-level one without gate": {
			vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
				v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2))}}
				policy(vpav1.ContainerResourcePolicy{ContainerName: "a", StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(3))}}})(v)
			}),
			old: with(func(v *vpav1.VerticalPodAutoscaler) {
				v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2))}}
			}),
			wantErr: "spec.resourcePolicy.containerPolicies[0].startupBoost: Forbidden"},
		"pod startupBoost added over a container-level one without gate": {
			vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
				v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2))}}
				policy(vpav1.ContainerResourcePolicy{ContainerName: "a", StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(3))}}})(v)
			}),
			old:     with(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(3))}}})),
			wantErr: "spec.startupBoost: Forbidden"},
		"both startupBoosts kept on update without gate": {
			vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
				v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(4))}}
				policy(vpav1.ContainerResourcePolicy{ContainerName: "a", StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(5))}}})(v)
			}),
			old: with(func(v *vpav1.VerticalPodAutoscaler) {
				v.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(2))}}
				policy(vpav1.ContainerResourcePolicy{ContainerName: "a", StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: ptr(int32(3))}}})(v)
			})},
		"two recommenders": {vpa: with(func(v *vpav1.VerticalPodAutoscaler) {
			v.Spec.Recommenders = []*vpav1.VerticalPodAutoscalerRecommenderSelector{{Name: "a"}, {Name: "b"}}
		}), wantErr: "spec.recommenders: Too many: 2: must have at most 1 item"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := features.NewGate()
			if tc.gates != "" {
				if err := g.Set(tc.gates); err != nil {
					t.Fatal(err)
				}
			}
			res := NewValidator(g).Admit(tc.vpa, tc.old)
			agg := res.Errors.ToAggregate()
			switch {
			case tc.wantErr == "" && agg != nil:
				t.Errorf("unexpected error: %v", agg)
			case tc.wantErr != "" && agg == nil:
				t.Errorf("no error, want %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(agg.Error(), tc.wantErr):
				t.Errorf("error %q does not contain %q", agg.Error(), tc.wantErr)
			}
			if (len(res.Warnings) > 0) != tc.wantWarning {
				t.Errorf("warnings %q, want some: %v", res.Warnings, tc.wantWarning)
			}
			if (len(res.Patch) > 0) != tc.wantDefault {
				t.Errorf("patch %v, want defaulting: %v", res.Patch, tc.wantDefault)
			}
		})
	}
}
