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
	"sort"
	"time"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/model"
)

// PercentileName is the name of the upstream estimator chain.
const PercentileName = "percentile"

// ConfidenceUnit is the unit of Result.Confidence: with it, confidence is the
// history length in days for a steady stream of one sample per minute.
const ConfidenceUnit = 24 * time.Hour

// Estimator computes the recommendation of one VPA.
type Estimator interface {
	// Name identifies the estimator, e.g. for an --estimator flag.
	Name() string
	// Recommend returns the recommendation for the containers in aggregates
	// (merged aggregate per container name) under the VPA's resource policy
	// and annotations. Containers whose policy mode is Off are left out.
	Recommend(aggregates map[string]*model.AggregateState, policy *vpav1.PodResourcePolicy, annotations map[string]string) Result
}

// Explainer is an Estimator that also gives the raw amounts of one
// container and every step of them. New returns one.
type Explainer interface {
	Estimator
	// Estimate returns the raw amounts for one aggregate, each at least
	// minimum (the container's share of the pod minimum).
	Estimate(a *model.AggregateState, minimum Resources) Amounts
	// Explain computes Estimate step by step: Explain(a, m).Amounts()
	// equals Estimate(a, m).
	Explain(a *model.AggregateState, minimum Resources) Breakdown
}

// Result is the outcome of Recommend.
type Result struct {
	// Containers is the recommendation list for the VPA status, sorted by
	// container name.
	Containers []vpav1.RecommendedContainerResources
	// Confidence maps each recommended container to how much history backs
	// it, in units of ConfidenceUnit (see model.AggregateState.Confidence).
	// Values below 1 mean less than a day of history.
	Confidence map[string]float64
}

// Resources is an amount of CPU (millicores) and memory (bytes).
type Resources struct {
	CPU    model.ResourceAmount
	Memory model.ResourceAmount
}

// Amounts is the raw recommendation of one container.
type Amounts struct {
	Target     Resources
	LowerBound Resources
	UpperBound Resources
}

// RecommendedContainers returns the names in aggregates whose policy mode is
// not Off, sorted.
func RecommendedContainers(aggregates map[string]*model.AggregateState, policy *vpav1.PodResourcePolicy) []string {
	names := make([]string, 0, len(aggregates))
	for name := range aggregates {
		if vpav1.GetContainerResourcePolicy(name, policy).ScalingMode() == vpav1.ContainerScalingModeOff {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// PodMinimum returns the pod minimum (PodMinCPUMillicores, PodMinMemoryMb)
// split evenly across n containers, each part truncated.
func (c Config) PodMinimum(n int) Resources {
	if n <= 0 {
		return Resources{}
	}
	fraction := 1.0 / float64(n)
	return Resources{
		CPU:    model.ScaleResource(model.CPUAmountFromCores(c.PodMinCPUMillicores*0.001), fraction),
		Memory: model.ScaleResource(model.MemoryAmountFromBytes(c.PodMinMemoryMb*1024*1024), fraction),
	}
}

// Percentile is the upstream estimator chain.
type Percentile struct {
	cfg Config
}

var _ Explainer = (*Percentile)(nil)

// NewPercentile returns the upstream chain with cfg.
func NewPercentile(cfg Config) *Percentile {
	return &Percentile{cfg: cfg}
}

// Name returns PercentileName.
func (p *Percentile) Name() string { return PercentileName }

// Recommend implements Estimator.
func (p *Percentile) Recommend(aggregates map[string]*model.AggregateState, policy *vpav1.PodResourcePolicy, annotations map[string]string) Result {
	return recommend(p.cfg, p.Estimate, aggregates, policy, annotations)
}

// recommend is the frame every estimator shares: it runs estimate on each
// recommended container with its share of the pod minimum, then Finish.
func recommend(cfg Config, estimate func(*model.AggregateState, Resources) Amounts,
	aggregates map[string]*model.AggregateState, policy *vpav1.PodResourcePolicy, annotations map[string]string) Result {
	names := RecommendedContainers(aggregates, policy)
	podMin := cfg.PodMinimum(len(names))
	raw := make(map[string]Amounts, len(names))
	conf := make(map[string]float64, len(names))
	for _, name := range names {
		a := aggregates[name]
		raw[name] = estimate(a, podMin)
		conf[name] = a.Confidence(ConfidenceUnit)
	}
	return Result{Containers: Finish(cfg, raw, policy, annotations), Confidence: conf}
}

// Estimate returns the raw amounts for one aggregate:
//
//	target = max(margin(P_target),                              minimum)
//	lower  = max(margin(P_lower) × (1 + 0.001/conf)^−2,         minimum)
//	upper  = max(margin(P_upper) × (1 + 1/conf)^+1,             minimum)
//
// with margin(x) = x + trunc(x × MarginFraction), conf the aggregate's
// confidence over the resource's confidence interval, and every product
// truncated to an integer amount as it is computed. Explain gives every
// step of it.
func (p *Percentile) Estimate(a *model.AggregateState, minimum Resources) Amounts {
	return p.Explain(a, minimum).Amounts()
}

// Step is how one amount (a resource's target or bound) is computed.
type Step struct {
	// Percentile is the histogram percentile used, e.g. 0.9.
	Percentile float64
	// Raw is the histogram's value at Percentile.
	Raw model.ResourceAmount
	// WithMargin is Raw plus the safety margin.
	WithMargin model.ResourceAmount
	// Confidence is the confidence the bound is scaled by (in units of the
	// resource's confidence interval); 0 for a target, which is not scaled.
	Confidence float64
	// WithConfidence is WithMargin scaled for the confidence (equal to
	// WithMargin for a target).
	WithConfidence model.ResourceAmount
	// Minimum is the container's share of the pod minimum.
	Minimum model.ResourceAmount
	// Final is the larger of WithConfidence and Minimum.
	Final model.ResourceAmount
}

// ResourceSteps are the steps of one resource.
type ResourceSteps struct {
	Target, LowerBound, UpperBound Step
}

// Breakdown is every step of Estimate for one aggregate.
type Breakdown struct {
	CPU, Memory ResourceSteps
	// MemoryRule is the memory rule of an estimator that derives memory
	// from one (Peak, Adaptive); nil for the percentile chain. Its memory
	// steps then start at the peak the target covers (Percentile, Raw),
	// carry the rule's target as WithMargin (the peak itself for the lower
	// bound) and the rule's amount as WithConfidence, with no confidence
	// scaling (Confidence 0).
	MemoryRule *MemoryRule
}

// Amounts returns the final amounts, as Estimate does.
func (b Breakdown) Amounts() Amounts {
	return Amounts{
		Target:     Resources{CPU: b.CPU.Target.Final, Memory: b.Memory.Target.Final},
		LowerBound: Resources{CPU: b.CPU.LowerBound.Final, Memory: b.Memory.LowerBound.Final},
		UpperBound: Resources{CPU: b.CPU.UpperBound.Final, Memory: b.Memory.UpperBound.Final},
	}
}

// Explain computes Estimate step by step.
func (p *Percentile) Explain(a *model.AggregateState, minimum Resources) Breakdown {
	c := p.cfg
	cpuConf := a.Confidence(c.ConfidenceIntervalCPU)
	memConf := a.Confidence(c.ConfidenceIntervalMemory)
	step := func(raw model.ResourceAmount, pct, conf, multiplier, exponent float64, minimum model.ResourceAmount) Step {
		s := Step{Percentile: pct, Raw: raw, WithMargin: withMargin(raw, c.MarginFraction), Minimum: minimum}
		s.WithConfidence = s.WithMargin
		if multiplier != 0 {
			s.Confidence = conf
			s.WithConfidence = withConfidence(s.WithMargin, conf, multiplier, exponent)
		}
		s.Final = max(s.WithConfidence, minimum)
		return s
	}
	cpu := func(pct, multiplier, exponent float64) Step {
		return step(model.CPUAmountFromCores(a.CPU.Percentile(pct)), pct, cpuConf, multiplier, exponent, minimum.CPU)
	}
	mem := func(pct, multiplier, exponent float64) Step {
		return step(model.MemoryAmountFromBytes(a.Memory.Percentile(pct)), pct, memConf, multiplier, exponent, minimum.Memory)
	}
	return Breakdown{
		CPU: ResourceSteps{
			Target:     cpu(c.TargetCPUPercentile, 0, 0),
			LowerBound: cpu(c.LowerBoundCPUPercentile, 0.001, -2),
			UpperBound: cpu(c.UpperBoundCPUPercentile, 1, 1),
		},
		Memory: ResourceSteps{
			Target:     mem(c.TargetMemoryPercentile, 0, 0),
			LowerBound: mem(c.LowerBoundMemoryPercentile, 0.001, -2),
			UpperBound: mem(c.UpperBoundMemoryPercentile, 1, 1),
		},
	}
}

// Config returns the estimator's configuration.
func (p *Percentile) Config() Config { return p.cfg }

// withMargin returns x + trunc(x × fraction).
func withMargin(x model.ResourceAmount, fraction float64) model.ResourceAmount {
	return x + model.ScaleResource(x, fraction)
}

// withConfidence returns trunc(x × (1 + multiplier/conf)^exponent). With no
// history (conf 0) the lower bound becomes 0 and the upper bound saturates
// at MaxResourceAmount; 0 × ∞ (no samples at all) is 0.
func withConfidence(x model.ResourceAmount, conf, multiplier, exponent float64) model.ResourceAmount {
	return model.ScaleResource(x, math.Pow(1+multiplier/conf, exponent))
}
