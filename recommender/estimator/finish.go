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
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/model"
)

const (
	// IntegerCPUAnnotationPrefix and IntegerCPUAnnotationSuffix surround the
	// container name in the VPA annotation that asks for whole-core CPU:
	// vpa-post-processor.kubernetes.io/<container>_integerCPU: "true".
	IntegerCPUAnnotationPrefix = "vpa-post-processor.kubernetes.io/"
	// IntegerCPUAnnotationSuffix ends the integer-CPU annotation key.
	IntegerCPUAnnotationSuffix = "_integerCPU"
)

// Finish turns raw amounts into the VPA status list, for any estimator:
//
//  1. keep only the container policy's controlledResources (cpu and memory
//     by default);
//  2. convert to quantities (CPU in milli units, memory in bytes, BinarySI),
//     rounding non-zero values up to multiples of RoundCPUMillicores and
//     RoundMemoryBytes, and humanizing memory when HumanizeMemory is set;
//  3. copy the target as UncappedTarget;
//  4. when CPUIntegerPostProcessorEnabled, round CPU up to whole cores in
//     target, bounds and uncapped target of containers annotated
//     vpa-post-processor.kubernetes.io/<container>_integerCPU: "true";
//  5. cap target and bounds to the policy's minAllowed, then to maxAllowed
//     merged with Config.MaxAllowed (the policy wins per resource); zero
//     quantities mean no limit; UncappedTarget is not capped;
//  6. sort by container name.
func Finish(cfg Config, raw map[string]Amounts, policy *vpav1.PodResourcePolicy, annotations map[string]string) []vpav1.RecommendedContainerResources {
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]vpav1.RecommendedContainerResources, 0, len(names))
	for _, name := range names {
		amounts := raw[name]
		cp := vpav1.GetContainerResourcePolicy(name, policy)
		cpu, mem := cp.Controls(corev1.ResourceCPU), cp.Controls(corev1.ResourceMemory)
		r := vpav1.RecommendedContainerResources{
			ContainerName:  name,
			Target:         cfg.toList(amounts.Target, cpu, mem),
			LowerBound:     cfg.toList(amounts.LowerBound, cpu, mem),
			UpperBound:     cfg.toList(amounts.UpperBound, cpu, mem),
			UncappedTarget: cfg.toList(amounts.Target, cpu, mem),
		}
		if cfg.CPUIntegerPostProcessorEnabled && annotations[IntegerCPUAnnotationPrefix+name+IntegerCPUAnnotationSuffix] == "true" {
			for _, l := range []corev1.ResourceList{r.Target, r.LowerBound, r.UpperBound, r.UncappedTarget} {
				roundUpCPU(l)
			}
		}
		minAllowed, maxAllowed := limits(cp, cfg.MaxAllowed)
		for _, l := range []corev1.ResourceList{r.Target, r.LowerBound, r.UpperBound} {
			capList(l, minAllowed, maxAllowed)
		}
		out = append(out, r)
	}
	return out
}

// toList converts amounts to a resource list of the controlled resources.
func (c Config) toList(r Resources, cpu, mem bool) corev1.ResourceList {
	l := make(corev1.ResourceList, 2)
	if cpu {
		m := r.CPU
		if m != 0 && c.RoundCPUMillicores > 1 {
			m = roundUpToMultiple(m, c.RoundCPUMillicores)
		}
		l[corev1.ResourceCPU] = *resource.NewScaledQuantity(int64(m), resource.Milli)
	}
	if mem {
		b := r.Memory
		if b != 0 && c.RoundMemoryBytes > 1 {
			b = roundUpToMultiple(b, c.RoundMemoryBytes)
		}
		q := resource.NewQuantity(int64(b), resource.BinarySI)
		if c.HumanizeMemory && b != 0 {
			if h, err := resource.ParseQuantity(HumanizeMemory(int64(b))); err == nil {
				q = &h
			}
		}
		l[corev1.ResourceMemory] = *q
	}
	return l
}

// roundUpToMultiple returns ceil(v/scale)·scale, computed in float64.
func roundUpToMultiple(v model.ResourceAmount, scale int) model.ResourceAmount {
	s := int64(scale)
	return model.ResourceAmount(int64(math.Ceil(float64(v)/float64(s))) * s)
}

// HumanizeMemory formats bytes with the largest binary unit it reaches
// (Ki, Mi, Gi, Ti) and two decimals, e.g. 1537 → "1.50Ki"; below 1Ki it
// prints the plain number.
func HumanizeMemory(bytes int64) string {
	const (
		ki = 1 << 10
		mi = 1 << 20
		gi = 1 << 30
		ti = 1 << 40
	)
	switch {
	case bytes >= ti:
		return fmt.Sprintf("%.2fTi", float64(bytes)/ti)
	case bytes >= gi:
		return fmt.Sprintf("%.2fGi", float64(bytes)/gi)
	case bytes >= mi:
		return fmt.Sprintf("%.2fMi", float64(bytes)/mi)
	case bytes >= ki:
		return fmt.Sprintf("%.2fKi", float64(bytes)/ki)
	}
	return fmt.Sprintf("%d", bytes)
}

// roundUpCPU rounds the CPU quantity of l up to whole cores.
func roundUpCPU(l corev1.ResourceList) {
	if q, ok := l[corev1.ResourceCPU]; ok {
		q.RoundUp(0)
		l[corev1.ResourceCPU] = q
	}
}

// limits returns the container policy's minAllowed and its maxAllowed with
// the global limits filled in for resources the policy does not name.
func limits(cp *vpav1.ContainerResourcePolicy, global corev1.ResourceList) (minAllowed, maxAllowed corev1.ResourceList) {
	if cp != nil {
		minAllowed = cp.MinAllowed
		maxAllowed = cp.MaxAllowed
	}
	if len(global) == 0 {
		return minAllowed, maxAllowed
	}
	merged := make(corev1.ResourceList, len(maxAllowed)+len(global))
	for name, q := range global {
		merged[name] = q
	}
	for name, q := range maxAllowed {
		merged[name] = q
	}
	return minAllowed, merged
}

// capList raises each quantity of l to minAllowed and then lowers it to
// maxAllowed; missing or zero limits are ignored.
func capList(l, minAllowed, maxAllowed corev1.ResourceList) {
	for name, q := range l {
		if lo, ok := minAllowed[name]; ok && !lo.IsZero() && q.Cmp(lo) < 0 {
			q = lo.DeepCopy()
		}
		if hi, ok := maxAllowed[name]; ok && !hi.IsZero() && q.Cmp(hi) > 0 {
			q = hi.DeepCopy()
		}
		l[name] = q
	}
}

// Limit names of a Clip.
const (
	LimitMinAllowed = "minAllowed"
	LimitMaxAllowed = "maxAllowed"
	// LimitGlobalMax is --container-recommendation-max-allowed-cpu or
	// --container-recommendation-max-allowed-memory.
	LimitGlobalMax = "global maximum"
)

// Clip is a limit that moved a container's target away from its uncapped
// target.
type Clip struct {
	Resource corev1.ResourceName
	// Limit is LimitMinAllowed, LimitMaxAllowed or LimitGlobalMax.
	Limit string
	// Value is the limit.
	Value resource.Quantity
}

// Clips returns the limits Finish applies to the container's uncapped
// target that change it, in the order Finish applies them, per resource in
// name order.
func (c Config) Clips(container string, policy *vpav1.PodResourcePolicy, uncapped corev1.ResourceList) []Clip {
	cp := vpav1.GetContainerResourcePolicy(container, policy)
	minAllowed, maxAllowed := limits(cp, c.MaxAllowed)
	names := make([]string, 0, len(uncapped))
	for name := range uncapped {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var out []Clip
	for _, n := range names {
		name := corev1.ResourceName(n)
		q := uncapped[name]
		if lo, ok := minAllowed[name]; ok && !lo.IsZero() && q.Cmp(lo) < 0 {
			out = append(out, Clip{Resource: name, Limit: LimitMinAllowed, Value: lo.DeepCopy()})
			q = lo.DeepCopy()
		}
		if hi, ok := maxAllowed[name]; ok && !hi.IsZero() && q.Cmp(hi) > 0 {
			limit := LimitGlobalMax
			if cp != nil {
				if _, own := cp.MaxAllowed[name]; own {
					limit = LimitMaxAllowed
				}
			}
			out = append(out, Clip{Resource: name, Limit: limit, Value: hi.DeepCopy()})
		}
	}
	return out
}
