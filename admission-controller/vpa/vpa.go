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

// Package vpa validates and defaults VerticalPodAutoscaler objects on create
// and update, with every rule of upstream's webhook plus one upstream misses:
// spec.targetRef is required on create. Denials carry field paths
// ("spec.resourcePolicy.containerPolicies[0].maxAllowed[cpu]: Invalid value:
// ..."). A VPA without an update policy gets {updateMode: Recreate}; the
// deprecated Auto mode is accepted with a warning, and so is a new VPA whose
// target another VPA or an HPA on cpu or memory already acts on
// (WithConflicts).
package vpa

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/features"
)

// Operation is a JSON Patch add operation used for defaulting.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Validator checks VPAs against the feature gates.
type Validator struct {
	gates     featuregate.FeatureGate
	conflicts *Conflicts
}

// NewValidator returns a Validator using gates.
func NewValidator(gates featuregate.FeatureGate) *Validator {
	return &Validator{gates: gates}
}

// Result is the outcome for one VPA.
type Result struct {
	Errors   field.ErrorList
	Warnings []string
	Patch    []Operation
}

var supportedModes = []string{
	string(vpav1.UpdateModeOff), string(vpav1.UpdateModeInitial), string(vpav1.UpdateModeRecreate),
	string(vpav1.UpdateModeInPlaceOrRecreate), string(vpav1.UpdateModeInPlace),
}

// Admit validates vpa; old is the stored object on update, nil on create. A
// gated field is allowed when its gate is on or old already uses it.
func (v *Validator) Admit(vpa, old *vpav1.VerticalPodAutoscaler) Result {
	var res Result
	spec := field.NewPath("spec")
	s := &vpa.Spec
	if old == nil && s.TargetRef == nil {
		res.Errors = append(res.Errors, field.Required(spec.Child("targetRef"), "targetRef is required"))
	}
	if s.TargetRef != nil {
		if s.TargetRef.Kind == "" {
			res.Errors = append(res.Errors, field.Required(spec.Child("targetRef", "kind"), ""))
		}
		if s.TargetRef.Name == "" {
			res.Errors = append(res.Errors, field.Required(spec.Child("targetRef", "name"), ""))
		}
	}
	if s.UpdatePolicy == nil {
		res.Patch = append(res.Patch, Operation{Op: "add", Path: "/spec/updatePolicy", Value: map[string]string{"updateMode": string(vpav1.UpdateModeRecreate)}})
	} else {
		v.validateUpdatePolicy(s.UpdatePolicy, old, spec.Child("updatePolicy"), &res)
	}
	if s.ResourcePolicy != nil {
		for i := range s.ResourcePolicy.ContainerPolicies {
			v.validateContainerPolicy(&s.ResourcePolicy.ContainerPolicies[i], old, spec.Child("resourcePolicy", "containerPolicies").Index(i), &res)
		}
	}
	if s.StartupBoost != nil {
		v.validateStartupBoost(s.StartupBoost, old != nil && old.Spec.StartupBoost != nil, spec.Child("startupBoost"), &res)
	}
	if len(s.Recommenders) > 1 {
		res.Errors = append(res.Errors, field.TooMany(spec.Child("recommenders"), len(s.Recommenders), 1))
	}
	for i, r := range s.Recommenders {
		if r == nil || r.Name == "" {
			res.Errors = append(res.Errors, field.Required(spec.Child("recommenders").Index(i).Child("name"), ""))
		}
	}
	if old == nil && len(res.Errors) == 0 {
		res.Warnings = append(res.Warnings, v.conflicts.conflictWarnings(vpa)...)
	}
	return res
}

func (v *Validator) enabled(f featuregate.Feature, usedBefore bool) bool {
	return usedBefore || (v.gates != nil && v.gates.Enabled(f))
}

func (v *Validator) validateUpdatePolicy(p *vpav1.PodUpdatePolicy, old *vpav1.VerticalPodAutoscaler, path *field.Path, res *Result) {
	mode := path.Child("updateMode")
	switch {
	case p.UpdateMode == nil:
		res.Errors = append(res.Errors, field.Required(mode, "updateMode is required if UpdatePolicy is used"))
	case *p.UpdateMode == vpav1.UpdateModeAuto:
		res.Warnings = append(res.Warnings, "UpdateMode \"Auto\" is deprecated and will be removed in a future API version. Use explicit update modes like \"Recreate\", \"Initial\", or \"InPlaceOrRecreate\" instead.")
	case *p.UpdateMode == vpav1.UpdateModeInPlace:
		oldInPlace := old != nil && vpav1.GetUpdateMode(old) == vpav1.UpdateModeInPlace
		if !v.enabled(features.InPlace, oldInPlace) {
			res.Errors = append(res.Errors, field.Forbidden(mode, "in-place vertical pod autoscaling requires the InPlace feature gate"))
		}
	default:
		if !slices.Contains(supportedModes, string(*p.UpdateMode)) {
			res.Errors = append(res.Errors, field.NotSupported(mode, *p.UpdateMode, supportedModes))
		}
	}
	if p.MinReplicas != nil && *p.MinReplicas <= 0 {
		res.Errors = append(res.Errors, field.Invalid(path.Child("minReplicas"), *p.MinReplicas, "minReplicas has to be positive"))
	}
	if p.EvictAfterOOMSeconds != nil {
		oldUsed := old != nil && old.Spec.UpdatePolicy != nil && old.Spec.UpdatePolicy.EvictAfterOOMSeconds != nil
		p2 := path.Child("evictAfterOOMSeconds")
		if !v.enabled(features.PerVPAConfig, oldUsed) {
			res.Errors = append(res.Errors, field.Forbidden(p2, "requires the PerVPAConfig feature gate"))
		} else if *p.EvictAfterOOMSeconds < 1 {
			res.Errors = append(res.Errors, field.Invalid(p2, *p.EvictAfterOOMSeconds, "must be at least 1"))
		}
	}
	for i, r := range p.EvictionRequirements {
		if r == nil {
			res.Errors = append(res.Errors, field.Required(path.Child("evictionRequirements").Index(i), ""))
		}
	}
}

func oldContainerPolicy(old *vpav1.VerticalPodAutoscaler, name string) *vpav1.ContainerResourcePolicy {
	if old == nil || old.Spec.ResourcePolicy == nil {
		return nil
	}
	for i := range old.Spec.ResourcePolicy.ContainerPolicies {
		if old.Spec.ResourcePolicy.ContainerPolicies[i].ContainerName == name {
			return &old.Spec.ResourcePolicy.ContainerPolicies[i]
		}
	}
	return nil
}

func (v *Validator) validateContainerPolicy(p *vpav1.ContainerResourcePolicy, old *vpav1.VerticalPodAutoscaler, path *field.Path, res *Result) {
	if p.ContainerName == "" {
		res.Errors = append(res.Errors, field.Required(path.Child("containerName"), "containerName is required"))
	}
	if p.Mode != nil && *p.Mode != vpav1.ContainerScalingModeAuto && *p.Mode != vpav1.ContainerScalingModeOff {
		res.Errors = append(res.Errors, field.NotSupported(path.Child("mode"), *p.Mode, []string{string(vpav1.ContainerScalingModeAuto), string(vpav1.ContainerScalingModeOff)}))
	}
	if p.Mode != nil && *p.Mode == vpav1.ContainerScalingModeOff && p.ControlledValues != nil && *p.ControlledValues == vpav1.ContainerControlledValuesRequestsAndLimits {
		res.Errors = append(res.Errors, field.Forbidden(path.Child("controlledValues"), "controlledValues shouldn't be specified if container scaling mode is off"))
	}
	if p.ControlledValues != nil && *p.ControlledValues != vpav1.ContainerControlledValuesRequestsAndLimits && *p.ControlledValues != vpav1.ContainerControlledValuesRequestsOnly {
		res.Errors = append(res.Errors, field.NotSupported(path.Child("controlledValues"), *p.ControlledValues, []string{string(vpav1.ContainerControlledValuesRequestsAndLimits), string(vpav1.ContainerControlledValuesRequestsOnly)}))
	}
	for _, name := range slices.Sorted(maps.Keys(p.MinAllowed)) {
		q := p.MinAllowed[name]
		if err := checkQuantity(name, q); err != "" {
			res.Errors = append(res.Errors, field.Invalid(path.Child("minAllowed").Key(string(name)), q.String(), err))
			continue
		}
		if max, ok := p.MaxAllowed[name]; ok && max.Cmp(q) < 0 {
			res.Errors = append(res.Errors, field.Invalid(path.Child("maxAllowed").Key(string(name)), max.String(), fmt.Sprintf("max resource for %s is lower than min (%s)", name, q.String())))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.MaxAllowed)) {
		if err := checkQuantity(name, p.MaxAllowed[name]); err != "" {
			q := p.MaxAllowed[name]
			res.Errors = append(res.Errors, field.Invalid(path.Child("maxAllowed").Key(string(name)), q.String(), err))
		}
	}
	prev := oldContainerPolicy(old, p.ContainerName)
	if p.ControlledResources != nil {
		for i, r := range *p.ControlledResources {
			if r == corev1.ResourceCPU || r == corev1.ResourceMemory {
				continue
			}
			if prev != nil && prev.ControlledResources != nil && slices.Contains(*prev.ControlledResources, r) {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %q is not supported and is ignored", path.Child("controlledResources").Index(i), r))
				continue
			}
			res.Errors = append(res.Errors, field.NotSupported(path.Child("controlledResources").Index(i), r, []string{string(corev1.ResourceCPU), string(corev1.ResourceMemory)}))
		}
	}
	perVPA := func(used func(*vpav1.ContainerResourcePolicy) bool, child string, check func() string) {
		if !used(p) {
			return
		}
		fp := path.Child(child)
		if !v.enabled(features.PerVPAConfig, prev != nil && used(prev)) {
			res.Errors = append(res.Errors, field.Forbidden(fp, "requires the PerVPAConfig feature gate"))
			return
		}
		if msg := check(); msg != "" {
			res.Errors = append(res.Errors, field.Invalid(fp, "", msg))
		}
	}
	perVPA(func(c *vpav1.ContainerResourcePolicy) bool { return c.OOMBumpUpRatio != nil }, "oomBumpUpRatio", func() string {
		if p.OOMBumpUpRatio.Cmp(resource.MustParse("1")) < 0 {
			return "must be at least 1"
		}
		return ""
	})
	perVPA(func(c *vpav1.ContainerResourcePolicy) bool { return c.OOMMinBumpUp != nil }, "oomMinBumpUp", func() string {
		if p.OOMMinBumpUp.Sign() < 0 {
			return "must not be negative"
		}
		return ""
	})
	perVPA(func(c *vpav1.ContainerResourcePolicy) bool { return c.MemoryAggregationIntervalSeconds != nil }, "memoryAggregationIntervalSeconds", func() string {
		if *p.MemoryAggregationIntervalSeconds < 1 {
			return "must be at least 1"
		}
		return ""
	})
	perVPA(func(c *vpav1.ContainerResourcePolicy) bool { return c.MemoryAggregationIntervalCount != nil }, "memoryAggregationIntervalCount", func() string {
		if *p.MemoryAggregationIntervalCount < 1 {
			return "must be at least 1"
		}
		return ""
	})
	if p.StartupBoost != nil {
		// A container's boost is new unless that container had one: a
		// pod-level boost in the old object does not let one in.
		v.validateStartupBoost(p.StartupBoost, prev != nil && prev.StartupBoost != nil, path.Child("startupBoost"), res)
	}
}

// validateStartupBoost checks a pod-level or container-level boost; oldUsed
// says whether the old object had one at the same place.
func (v *Validator) validateStartupBoost(b *vpav1.StartupBoost, oldUsed bool, path *field.Path, res *Result) {
	if !v.enabled(features.CPUStartupBoost, oldUsed) {
		res.Errors = append(res.Errors, field.Forbidden(path, "requires the CPUStartupBoost feature gate"))
		return
	}
	if b.CPU == nil {
		return
	}
	cpu := path.Child("cpu")
	switch b.CPU.Type {
	case "":
		res.Errors = append(res.Errors, field.Required(cpu.Child("type"), ""))
	case vpav1.FactorStartupBoostType:
		if b.CPU.Factor == nil {
			res.Errors = append(res.Errors, field.Required(cpu.Child("factor"), "factor is required when type is Factor"))
		} else if *b.CPU.Factor < 1 {
			res.Errors = append(res.Errors, field.Invalid(cpu.Child("factor"), *b.CPU.Factor, "must be at least 1"))
		}
	case vpav1.QuantityStartupBoostType:
		if b.CPU.Quantity == nil {
			res.Errors = append(res.Errors, field.Required(cpu.Child("quantity"), "quantity is required when type is Quantity"))
		} else if msg := checkQuantity(corev1.ResourceCPU, *b.CPU.Quantity); msg != "" {
			res.Errors = append(res.Errors, field.Invalid(cpu.Child("quantity"), b.CPU.Quantity.String(), msg))
		}
	default:
		res.Errors = append(res.Errors, field.NotSupported(cpu.Child("type"), b.CPU.Type, []string{string(vpav1.FactorStartupBoostType), string(vpav1.QuantityStartupBoostType)}))
	}
}

// checkQuantity requires a quantity that is not negative, in whole
// millicores for cpu and whole bytes for memory: every pod of a workload
// patched to a negative request would be refused by the API server.
func checkQuantity(name corev1.ResourceName, q resource.Quantity) string {
	if q.Sign() < 0 {
		return "must not be negative"
	}
	switch name {
	case corev1.ResourceCPU:
		if _, ok := q.AsScale(resource.Milli); !ok {
			return "cpu must be a whole number of millicores"
		}
	case corev1.ResourceMemory:
		if _, ok := q.AsScale(0); !ok {
			return "memory must be a whole number of bytes"
		}
	}
	return ""
}
