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

// Package explain builds `kubectl vpa explain`: for one VPA, per container,
// the history its checkpoint holds, the estimator's steps from histogram
// percentile to target and bounds (recomputed by restoring the checkpoint
// into the recommender's model and running the recommender's estimator),
// the limits that clipped the target, recent OOM kills, and per pod the
// requests against the recommendation and what the updater would do, by the
// updater's own decision code (pkg/update).
package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/pkg/update"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

// Options are the component settings explain assumes: the recommender's
// estimator and model, the updater's thresholds. The defaults are the
// components' defaults; a cluster that runs them with other flags gives
// explain the same flags.
type Options struct {
	// Estimator is the recommender's --estimator: the estimator explained.
	Estimator string
	// Estimators are the recommender's estimator settings.
	Estimators        estimator.Options
	Model             *model.Config
	PerVPAConfig      bool
	Priority          update.Thresholds
	Restriction       update.RestrictionConfig
	EvictionRateLimit float64
	EvictionRateBurst int
}

// DefaultOptions returns the components' defaults.
func DefaultOptions() Options {
	return Options{
		Estimator:         estimator.PercentileName,
		Estimators:        estimator.DefaultOptions(),
		Model:             model.DefaultConfig(),
		Priority:          update.DefaultThresholds(),
		Restriction:       update.RestrictionConfig{MinReplicas: 2, EvictionTolerance: 0.5},
		EvictionRateLimit: -1,
		EvictionRateBurst: 1,
	}
}

// Explanation is the outcome for one VPA; its JSON form is the output of
// -o json and -o yaml.
type Explanation struct {
	// Estimator is the estimator whose steps are explained.
	Estimator  string `json:"estimator"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Target     string `json:"target"`
	UpdateMode string `json:"updateMode"`
	// ManagedBy is what made the VPA when the policy controller manages it:
	// "policy <name>" or the namespace label.
	ManagedBy  string      `json:"managedBy,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
	// Problems are findings about the VPA as a whole: an unresolvable
	// target, overlapping VPAs, an HPA on the same resource.
	Problems []string `json:"problems,omitempty"`
	// Fits say how the recommendation is fitted to what the pods must fit,
	// as the components with their default flags fit it: the cap to the
	// largest eligible node (the node named, with the uncapped target),
	// the cap of the increase to the namespace's ResourceQuotas, each
	// resource left to an HPA, and each HPA kept at its scale point.
	Fits       []string    `json:"fits,omitempty"`
	Containers []Container `json:"containers"`
	Pods       []Pod       `json:"pods"`
	Updater    Updater     `json:"updater"`
	Warnings   []string    `json:"warnings,omitempty"`
}

// Condition is a VPA status condition.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Container is the explanation of one container's recommendation.
type Container struct {
	Name string `json:"name"`
	// Mode is the container's scaling mode; ControlledValues and
	// ControlledResources its policy.
	Mode                string   `json:"mode"`
	ControlledValues    string   `json:"controlledValues"`
	ControlledResources []string `json:"controlledResources"`
	// Status is the recommendation in the VPA status, nil when none.
	Status *Recommendation `json:"status,omitempty"`
	// ExpectedStatus is what the recommender writes in the status from the
	// estimate (estimator.Finish: the --round-* flags, --humanize-memory,
	// the integer-CPU post-processor, the policy's and the global limits):
	// Status, when the recommender runs the explained estimator with the
	// same flags over the checkpoint's history. Nil without a checkpoint.
	ExpectedStatus *Recommendation `json:"expectedStatus,omitempty"`
	// History is what the container's checkpoint holds, nil without one.
	History *History `json:"history,omitempty"`
	// CPU and Memory are the estimator's steps from the checkpoint.
	CPU    *Steps `json:"cpu,omitempty"`
	Memory *Steps `json:"memory,omitempty"`
	// MemoryRule is how the peak and adaptive estimators derive the memory
	// steps; nil for the percentile chain.
	MemoryRule *MemoryRule `json:"memoryRule,omitempty"`
	// Clipped lists the limits that moved the target away from the
	// uncapped target.
	Clipped []Clip `json:"clipped,omitempty"`
	OOMs    []OOM  `json:"ooms,omitempty"`
	// Notes explain differences between the estimate and the status.
	Notes []string `json:"notes,omitempty"`
}

// Recommendation is one container's recommendation, as quantities.
type Recommendation struct {
	Target         map[string]string `json:"target"`
	UncappedTarget map[string]string `json:"uncappedTarget,omitempty"`
	LowerBound     map[string]string `json:"lowerBound,omitempty"`
	UpperBound     map[string]string `json:"upperBound,omitempty"`
}

// History is the usage history of one container, from its checkpoint.
type History struct {
	// Checkpointed is when the recommender last wrote the checkpoint.
	Checkpointed     metav1.Time `json:"checkpointed"`
	FirstSampleStart metav1.Time `json:"firstSampleStart"`
	LastSampleStart  metav1.Time `json:"lastSampleStart"`
	// Days is the time between the first and the last sample.
	Days float64 `json:"days"`
	// Samples is the number of CPU samples; MemoryPeaks the total weight of
	// the memory histogram (one per memory window per container instance,
	// decayed).
	Samples int `json:"samples"`
	// Confidence is the recommender's confidence in days: the lesser of the
	// days covered and the samples at one per minute.
	Confidence float64 `json:"confidence"`
	// Error is set when the checkpoint cannot be restored.
	Error string `json:"error,omitempty"`
}

// Steps are the estimator's steps for one resource.
type Steps struct {
	Target     Step `json:"target"`
	LowerBound Step `json:"lowerBound"`
	UpperBound Step `json:"upperBound"`
}

// Step is one amount, from percentile to final value.
type Step struct {
	Percentile float64 `json:"percentile"`
	Histogram  string  `json:"histogram"`
	WithMargin string  `json:"withMargin"`
	// Confidence is the confidence a bound is scaled by; nil for a target.
	Confidence     *float64 `json:"confidence,omitempty"`
	WithConfidence string   `json:"withConfidence"`
	Minimum        string   `json:"minimum"`
	Final          string   `json:"final"`
}

// MemoryRule is how the peak or adaptive estimator derives memory from the
// checkpoint's histogram of window peaks (estimator.MemoryRule).
type MemoryRule struct {
	// ZeroShare is the share of the peaks' weight that reads as no usage.
	ZeroShare float64 `json:"zeroShare"`
	// Typical is the median of the non-zero peaks.
	Typical string `json:"typical"`
	// Horizon is how much recent history Level covers.
	Horizon string `json:"horizon"`
	// Level is the highest peak of about Horizon, read at LevelPercentile
	// of the peak histogram.
	Level           string  `json:"level"`
	LevelPercentile float64 `json:"levelPercentile"`
	Margin          Margin  `json:"margin"`
	// Covered is Level × (1 + Margin.Total).
	Covered string `json:"covered"`
	// Arm is the adaptive estimator's chosen arm.
	Arm *Arm `json:"arm,omitempty"`
	// RecentJump is the adaptive estimator's recent jump.
	RecentJump *Jump `json:"recentJump,omitempty"`
	// Lower, Target and Upper are the rule's amounts, before the pod
	// minimum.
	Lower  string `json:"lower"`
	Target string `json:"target"`
	Upper  string `json:"upper"`
}

// Margin is a memory rule's margin in parts.
type Margin struct {
	// Base is the peak estimator's base margin, or the chosen arm's.
	Base float64 `json:"base"`
	// Variability is the peak estimator's margin for the distance between
	// the level and the typical peak.
	Variability float64 `json:"variability"`
	// Young is the margin for a short history, Zero that for zero readings.
	Young float64 `json:"young"`
	Zero  float64 `json:"zero"`
	// Max is the cap: on the total margin (peak), on young and zero
	// together (adaptive).
	Max float64 `json:"max"`
	// Total is the margin after the cap.
	Total float64 `json:"total"`
}

// Arm is the adaptive estimator's chosen arm and its score: Cost =
// Headroom + OverrunCost × Overrun.
type Arm struct {
	// Scored is how many arms were scored.
	Scored      int     `json:"scored"`
	Headroom    float64 `json:"headroom"`
	Overrun     float64 `json:"overrun"`
	OverrunCost float64 `json:"overrunCost"`
	Cost        float64 `json:"cost"`
}

// Jump is the adaptive estimator's recent jump: the highest recent peak
// (Top) over the next lower peak (Prior).
type Jump struct {
	Found bool `json:"found"`
	// Window is how recent a peak must be to count.
	Window string `json:"window"`
	// Factor and MaxMargin give Margin = min(Factor × (Top/Prior − 1),
	// MaxMargin).
	Factor     float64 `json:"factor"`
	MaxMargin  float64 `json:"maxMargin"`
	Top        string  `json:"top,omitempty"`
	Prior      string  `json:"prior,omitempty"`
	Percentile float64 `json:"percentile,omitempty"`
	Margin     float64 `json:"margin,omitempty"`
	Covered    string  `json:"covered,omitempty"`
	// SetsTarget is whether Covered is above the arm's and sets the
	// target.
	SetsTarget bool `json:"setsTarget"`
}

// Clip is a limit that moved a target.
type Clip struct {
	Resource string `json:"resource"`
	Limit    string `json:"limit"`
	Value    string `json:"value"`
	Uncapped string `json:"uncapped"`
	Target   string `json:"target"`
}

// OOM is an OOM kill of the container in one of the VPA's pods.
type OOM struct {
	Pod      string      `json:"pod"`
	Finished metav1.Time `json:"finished"`
	// RanFor is how long the container ran before it was killed.
	RanFor string `json:"ranFor"`
	// MemoryRequest is the container's memory request at the time.
	MemoryRequest string `json:"memoryRequest,omitempty"`
}

// Pod is one pod of the VPA.
type Pod struct {
	Name       string         `json:"name"`
	Phase      string         `json:"phase"`
	Age        string         `json:"age,omitempty"`
	Containers []PodContainer `json:"containers"`
	// Decision is the updater's rule for the pod.
	Decision string `json:"decision"`
	// ResourceDiff is the rule's relative change of requests.
	ResourceDiff float64 `json:"resourceDiff"`
	// Action is what the updater would do with the pod now, and why.
	Action string `json:"action"`
}

// PodContainer is one container of a pod: what it runs with against the
// recommendation capped for this pod.
type PodContainer struct {
	Name       string            `json:"name"`
	Requests   map[string]string `json:"requests"`
	Target     map[string]string `json:"target,omitempty"`
	LowerBound map[string]string `json:"lowerBound,omitempty"`
	UpperBound map[string]string `json:"upperBound,omitempty"`
	// Position per resource: below, within or above the bounds, or
	// unrecommended.
	Position map[string]string `json:"position,omitempty"`
	// Capped says what capped the recommendation for this pod (the
	// namespace's LimitRanges, the container's limits under
	// RequestsOnly, the policy), as the admission controller caps it.
	Capped []string `json:"capped,omitempty"`
}

// Updater is what the updater does with the VPA as a whole.
type Updater struct {
	// Acts is whether the updater processes the VPA's running pods.
	Acts    bool     `json:"acts"`
	Summary string   `json:"summary"`
	Notes   []string `json:"notes,omitempty"`
}

// Compute explains v from the snapshot index.
func Compute(ix *snapshot.Index, v *vpav1.VerticalPodAutoscaler, o Options) *Explanation {
	if o.Model == nil {
		o.Model = model.DefaultConfig()
	}
	if o.Estimator == "" {
		o.Estimator = estimator.PercentileName
	}
	e := &Explanation{Estimator: o.Estimator, Namespace: v.Namespace, Name: v.Name, UpdateMode: string(vpav1.GetUpdateMode(v)), Warnings: ix.Warnings,
		ManagedBy: policyv1alpha1.ManagedBy(v.Labels)}
	if v.Spec.TargetRef != nil {
		e.Target = v.Spec.TargetRef.Kind + "/" + v.Spec.TargetRef.Name
	}
	for _, c := range v.Status.Conditions {
		e.Conditions = append(e.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	if why, ok := ix.Unresolved[v]; ok {
		e.Problems = append(e.Problems, "target: "+why)
	}
	others, chosen := ix.Overlaps(v)
	if len(others) > 0 {
		e.Problems = append(e.Problems, overlapText(v.Name, others, chosen))
	}
	pods := ix.PodsOf(v)
	names := containerNames(v, pods, ix.CheckpointsOf(v))
	hpas := ix.HPAsIn(v.Namespace)
	yields, kept := hpa.Yields(v, hpas, names), hpa.Kept(v, hpas, names)
	var fought []hpa.Conflict
	for _, c := range hpa.Conflicts(v, hpas, names) {
		if !slices.Contains(yields, c) && !slices.Contains(kept, c) {
			fought = append(fought, c)
		}
	}
	if m := hpa.Message(v, fought); m != "" {
		e.Problems = append(e.Problems, m)
	}
	e.Fits = fits(v, hpas, yields, kept)
	est, err := estimator.New(o.Estimator, o.Estimators)
	if err != nil {
		e.Problems = append(e.Problems, "estimator: "+err.Error())
	}
	cps := ix.CheckpointsOf(v)
	for _, name := range names {
		e.Containers = append(e.Containers, container(ix, v, name, cps[name], pods, est, o))
	}
	e.Pods, e.Updater = updater(ix, v, o)
	return e
}

// fits are the Explanation's Fits: the node and quota caps as the
// recommender's conditions report them, and the HPAs' yields and kept
// scale points.
func fits(v *vpav1.VerticalPodAutoscaler, hpas []*autoscalingv2.HorizontalPodAutoscaler, yields, kept []hpa.Conflict) []string {
	var out []string
	for _, c := range v.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case vpav1.RecommendationCappedToNode:
			// The recommender's message names the node and the
			// uncapped target.
			out = append(out, "node: "+c.Message)
		case vpav1.ResourceQuotaConflict:
			out = append(out, "quota: "+c.Message)
		}
	}
	for _, y := range yields {
		out = append(out, fmt.Sprintf("hpa: %s is left to HorizontalPodAutoscaler %s, which scales on its utilization: this VPA does not set it", what(y), y.HPA))
	}
	for _, k := range kept {
		line := fmt.Sprintf("hpa: HorizontalPodAutoscaler %s keeps its scale point on %s while this VPA sets it", k.HPA, what(k))
		for _, h := range hpas {
			if h.Name != k.HPA {
				continue
			}
			r, _ := hpa.RecordOf(h)
			if m := r.Find(k.Resource, k.Container); m != nil {
				t, _ := hpa.UtilizationTarget(h, k.Resource, k.Container)
				line += fmt.Sprintf(": target %d%%, recorded %d%% at %s per pod", t, m.Original, m.Request.String())
			}
		}
		out = append(out, line)
	}
	return out
}

func what(c hpa.Conflict) string {
	if c.Container != "" {
		return fmt.Sprintf("%s of container %s", c.Resource, c.Container)
	}
	return string(c.Resource)
}

// containerNames are the containers of the VPA's pods, its recommendation
// and its checkpoints, sorted.
func containerNames(v *vpav1.VerticalPodAutoscaler, pods []*corev1.Pod, cps map[string]*vpav1.VerticalPodAutoscalerCheckpoint) []string {
	set := map[string]bool{}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			set[c.Name] = true
		}
	}
	if v.Status.Recommendation != nil {
		for _, r := range v.Status.Recommendation.ContainerRecommendations {
			set[r.ContainerName] = true
		}
	}
	for name := range cps {
		set[name] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func container(ix *snapshot.Index, v *vpav1.VerticalPodAutoscaler, name string, cp *vpav1.VerticalPodAutoscalerCheckpoint,
	pods []*corev1.Pod, est estimator.Explainer, o Options) Container {
	policy := vpav1.GetContainerResourcePolicy(name, v.Spec.ResourcePolicy)
	c := Container{Name: name, Mode: string(policy.ScalingMode()), ControlledValues: string(policy.ControlledValuesOrDefault())}
	for _, r := range policy.ControlledResourcesOrDefault() {
		c.ControlledResources = append(c.ControlledResources, string(r))
	}
	var status *vpav1.RecommendedContainerResources
	if v.Status.Recommendation != nil {
		for i := range v.Status.Recommendation.ContainerRecommendations {
			if r := &v.Status.Recommendation.ContainerRecommendations[i]; r.ContainerName == name {
				status = r
			}
		}
	}
	if status != nil {
		c.Status = recommendation(status)
		for _, clip := range o.Estimators.Config.Clips(name, v.Spec.ResourcePolicy, status.UncappedTarget) {
			t := status.Target[clip.Resource]
			u := status.UncappedTarget[clip.Resource]
			c.Clipped = append(c.Clipped, Clip{Resource: string(clip.Resource), Limit: clip.Limit, Value: clip.Value.String(), Uncapped: u.String(), Target: t.String()})
		}
		// A difference no policy limit explains: a global maximum the
		// plugin was not told about, or rounding.
		for r, u := range status.UncappedTarget {
			t, ok := status.Target[r]
			if !ok || t.Cmp(u) == 0 || hasClip(c.Clipped, string(r)) {
				continue
			}
			c.Clipped = append(c.Clipped, Clip{Resource: string(r), Limit: "unknown (a --container-recommendation-max-allowed-" + string(r) + " flag of the recommender?)",
				Uncapped: u.String(), Target: t.String()})
		}
	}
	if cp != nil {
		var a *model.AggregateState
		c.History, a = history(cp, v, name, o, ix.Now)
		// The pod minimum is split across the recommended containers.
		minimum := o.Estimators.Config.PodMinimum(max(len(recommendedNames(v, ix.CheckpointsOf(v), pods)), 1))
		if a != nil && est != nil {
			b := est.Explain(a, minimum)
			c.CPU, c.Memory = steps(b.CPU, cpuQuantity, false), steps(b.Memory, memoryQuantity, b.MemoryRule != nil)
			if b.MemoryRule != nil {
				c.MemoryRule = memoryRule(b.MemoryRule, o)
			}
			expected := written(o, v, name, b.Amounts())
			c.ExpectedStatus = recommendation(&expected)
			if status != nil && cp.Status.MemoryHistogram.TotalWeight > 0 {
				if n := otherEstimator(status, &expected, cp, v, name, minimum, o, ix.Now); n != "" {
					c.Notes = append(c.Notes, n)
				}
			}
		}
		if c.Memory != nil && cp.Status.MemoryHistogram.TotalWeight == 0 {
			c.Notes = append(c.Notes, "the checkpoint holds no memory peak yet: a peak enters it when its memory aggregation window "+
				"(24h by default) closes, so the memory estimate here is the pod minimum while the status also counts the open window")
		}
	}
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			t := s.LastTerminationState.Terminated
			if s.Name != name || t == nil || t.Reason != "OOMKilled" {
				continue
			}
			oom := OOM{Pod: p.Name, Finished: t.FinishedAt, RanFor: t.FinishedAt.Sub(t.StartedAt.Time).Round(time.Second).String()}
			for _, sc := range p.Spec.Containers {
				if q, ok := sc.Resources.Requests[corev1.ResourceMemory]; ok && sc.Name == name {
					oom.MemoryRequest = q.String()
				}
			}
			c.OOMs = append(c.OOMs, oom)
		}
	}
	return c
}

func hasClip(cs []Clip, r string) bool {
	for _, c := range cs {
		if c.Resource == r {
			return true
		}
	}
	return false
}

// recommendedNames are the containers the estimator splits the pod minimum
// across: those of the live pods (else of the checkpoints) not in mode Off.
func recommendedNames(v *vpav1.VerticalPodAutoscaler, cps map[string]*vpav1.VerticalPodAutoscalerCheckpoint, pods []*corev1.Pod) []string {
	set := map[string]bool{}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			set[c.Name] = true
		}
	}
	if len(set) == 0 {
		for n := range cps {
			set[n] = true
		}
	}
	var out []string
	for n := range set {
		if vpav1.GetContainerResourcePolicy(n, v.Spec.ResourcePolicy).ScalingMode() != vpav1.ContainerScalingModeOff {
			out = append(out, n)
		}
	}
	return out
}

// history restores the checkpoint into the model the recommender runs the
// explained estimator on, as of the checkpoint's time; the aggregate is nil
// when the checkpoint cannot be restored.
func history(cp *vpav1.VerticalPodAutoscalerCheckpoint, v *vpav1.VerticalPodAutoscaler, name string, o Options, now time.Time) (*History, *model.AggregateState) {
	h := &History{Checkpointed: cp.Status.LastUpdateTime, FirstSampleStart: cp.Status.FirstSampleStart, LastSampleStart: cp.Status.LastSampleStart,
		Samples: cp.Status.TotalSamplesCount}
	a, err := restore(cp, v, name, o.Estimator, o, now)
	if err != nil {
		h.Error = err.Error()
		return h, nil
	}
	if !a.LastSampleStart.IsZero() && !a.FirstSampleStart.IsZero() {
		h.Days = round(a.LastSampleStart.Sub(a.FirstSampleStart).Hours()/24, 2)
	}
	h.Confidence = round(a.Confidence(estimator.ConfidenceUnit), 2)
	return h, a
}

// restore restores the checkpoint as the recommender running the estimator
// called estimatorName holds it (estimator.ModelConfig), as of the
// checkpoint's time.
func restore(cp *vpav1.VerticalPodAutoscalerCheckpoint, v *vpav1.VerticalPodAutoscaler, name, estimatorName string, o Options, now time.Time) (*model.AggregateState, error) {
	cfg := estimator.ModelConfig(estimatorName, *o.Model)
	if o.PerVPAConfig {
		cfg = *cfg.ForPolicy(vpav1.GetContainerResourcePolicy(name, v.Spec.ResourcePolicy))
	}
	at := cp.Status.LastUpdateTime.Time
	if at.IsZero() {
		at = now
	}
	return model.RestoreCheckpoint(&cfg, &cp.Status, at)
}

// otherEstimator returns a note when the status's uncapped memory target is
// more than 1% from expected's, what the explained estimator writes, but
// within 1% of what another estimator (with the same settings, from the same
// checkpoint) writes: the recommender likely runs that one.
func otherEstimator(status, expected *vpav1.RecommendedContainerResources, cp *vpav1.VerticalPodAutoscalerCheckpoint,
	v *vpav1.VerticalPodAutoscaler, name string, minimum estimator.Resources, o Options, now time.Time) string {
	got, ok := uncappedMemory(status)
	if !ok {
		return ""
	}
	estimate, ok := uncappedMemory(expected)
	if !ok || within(got, estimate) {
		return ""
	}
	var matches []string
	for _, n := range estimator.Names() {
		if n == o.Estimator {
			continue
		}
		e, err := estimator.New(n, o.Estimators)
		if err != nil {
			continue
		}
		a, err := restore(cp, v, name, n, o, now)
		if err != nil {
			continue
		}
		w := written(o, v, name, e.Estimate(a, minimum))
		if other, ok := uncappedMemory(&w); ok && within(got, other) {
			matches = append(matches, fmt.Sprintf("the %s estimator's %s: the recommender likely runs --estimator=%s; pass --estimator=%s to explain its steps", n, memoryQuantity(other), n, n))
		}
	}
	if len(matches) == 0 {
		return ""
	}
	return fmt.Sprintf("the status's uncapped memory target %s is more than 1%% from the %s estimator's estimate %s and within 1%% of %s",
		memoryQuantity(got), o.Estimator, memoryQuantity(estimate), strings.Join(matches, ", or of "))
}

// written is what the recommender writes in the status for container name from its raw
// amounts: estimator.Finish with the VPA's policy and annotations.
func written(o Options, v *vpav1.VerticalPodAutoscaler, name string, raw estimator.Amounts) vpav1.RecommendedContainerResources {
	return estimator.Finish(o.Estimators.Config, map[string]estimator.Amounts{name: raw}, v.Spec.ResourcePolicy, v.Annotations)[0]
}

// uncappedMemory is the memory of r's uncapped target; ok is false when r has none (memory is
// not a controlled resource).
func uncappedMemory(r *vpav1.RecommendedContainerResources) (model.ResourceAmount, bool) {
	q, ok := r.UncappedTarget[corev1.ResourceMemory]
	return model.ResourceAmount(q.Value()), ok
}

// recommendation is r as quantities.
func recommendation(r *vpav1.RecommendedContainerResources) *Recommendation {
	return &Recommendation{Target: quantities(r.Target), UncappedTarget: quantities(r.UncappedTarget),
		LowerBound: quantities(r.LowerBound), UpperBound: quantities(r.UpperBound)}
}

// within reports whether got is within 1% of want.
func within(got, want model.ResourceAmount) bool {
	d := float64(got) - float64(want)
	return d <= 0.01*float64(want) && d >= -0.01*float64(want)
}

// steps converts one resource's steps; the steps of a memory rule have no
// confidence scaling.
func steps(r estimator.ResourceSteps, q func(model.ResourceAmount) string, rule bool) *Steps {
	conv := func(s estimator.Step) Step {
		st := Step{Percentile: s.Percentile, Histogram: q(s.Raw), WithMargin: q(s.WithMargin),
			WithConfidence: q(s.WithConfidence), Minimum: q(s.Minimum), Final: q(s.Final)}
		if !rule && (s.WithConfidence != s.WithMargin || s.Confidence != 0) {
			c := s.Confidence
			st.Confidence = &c
		}
		return st
	}
	return &Steps{Target: conv(r.Target), LowerBound: conv(r.LowerBound), UpperBound: conv(r.UpperBound)}
}

// memoryRule converts the estimator's memory rule, with the caps and costs
// of the explained estimator's settings.
func memoryRule(r *estimator.MemoryRule, o Options) *MemoryRule {
	bytes := func(b float64) string { return memoryQuantity(model.MemoryAmountFromBytes(b)) }
	out := &MemoryRule{
		ZeroShare: r.ZeroShare, Typical: bytes(r.Typical), Horizon: duration(r.Horizon), Level: bytes(r.Level), LevelPercentile: r.LevelPercentile,
		Margin:  Margin{Base: r.BaseMargin, Variability: r.VariabilityMargin, Young: r.YoungMargin, Zero: r.ZeroMargin, Max: o.Estimators.Peak.MemoryMaxMargin, Total: r.Margin},
		Covered: bytes(r.Covered), Lower: memoryQuantity(r.Lower), Target: memoryQuantity(r.Target), Upper: memoryQuantity(r.Upper),
	}
	if o.Estimator == estimator.AdaptiveName {
		ad := o.Estimators.Adaptive
		out.Margin.Max = ad.MemoryMaxExtraMargin
		out.Arm = &Arm{Scored: r.Arms, Headroom: r.Headroom, Overrun: r.Overrun, OverrunCost: ad.MemoryOverrunCost, Cost: r.Cost}
		j := r.Jump
		out.RecentJump = &Jump{Found: j.Found, Window: duration(ad.MemoryRecordWindow), Factor: ad.MemoryRecordFactor, MaxMargin: ad.MemoryRecordMaxMargin, SetsTarget: j.Raised}
		if j.Found {
			out.RecentJump.Top, out.RecentJump.Prior, out.RecentJump.Covered = bytes(j.Top), bytes(j.Prior), bytes(j.Covered)
			out.RecentJump.Percentile, out.RecentJump.Margin = j.Percentile, j.Margin
		}
	}
	return out
}

// duration formats whole days as "14d", anything else as Go does.
func duration(d time.Duration) string {
	const day = 24 * time.Hour
	if d > 0 && d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return d.String()
}

func cpuQuantity(m model.ResourceAmount) string {
	return resource.NewMilliQuantity(int64(m), resource.DecimalSI).String()
}

// memoryQuantity formats bytes as a quantity when it is a whole number of
// the unit, else in Mi with two decimals (the histogram's values are
// bucket edges, rarely round).
func memoryQuantity(b model.ResourceAmount) string {
	q := resource.NewQuantity(int64(b), resource.BinarySI).String()
	if int64(b) < 1<<20 || strings.HasSuffix(q, "i") {
		return q
	}
	return fmt.Sprintf("%.2fMi", float64(b)/(1<<20))
}

func round(x float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(x*p+0.5)) / p
}

func quantities(l corev1.ResourceList) map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

// overlapText is the OverlappingVPA condition's message
// (target.OverlapMessage, which the recommender sets) as a problem line:
// "overlap: " and the message, its first letter in lower case.
func overlapText(self string, others, chosen []string) string {
	msg := target.OverlapMessage(self, others, chosen)
	first, size := utf8.DecodeRuneInString(msg)
	return "overlap: " + string(unicode.ToLower(first)) + msg[size:]
}

// updater runs the updater's decision for the VPA's pods: update.Plan
// for each pod, then update.Restrictions over the candidates in the updater's
// order, then the PodDisruptionBudgets the Eviction API would enforce.
func updater(ix *snapshot.Index, v *vpav1.VerticalPodAutoscaler, o Options) ([]Pod, Updater) {
	mode := vpav1.GetUpdateMode(v)
	var u Updater
	recPods := ix.PodsOf(v)
	pods := ix.UpdaterPods(v)
	switch {
	case !mode.UpdatesRunningPods():
		u.Summary = fmt.Sprintf("mode %s: the updater leaves running pods alone", mode)
		if mode == vpav1.UpdateModeInitial {
			u.Summary += "; the admission controller sets requests when pods are created"
		} else {
			u.Summary += "; nothing applies the recommendation"
		}
		pods = recPods
	case ix.Unresolved[v] != "":
		u.Summary = "the updater skips this VPA: its target cannot be resolved"
		pods = recPods
	case v.Status.Recommendation == nil || len(v.Status.Recommendation.ContainerRecommendations) == 0:
		u.Summary = "no recommendation yet: the updater has nothing to apply"
	default:
		u.Acts = true
	}
	if len(recPods) > len(pods) && u.Acts {
		u.Notes = append(u.Notes, fmt.Sprintf("%d of the pods the VPA matches are controlled by another VPA or controller; the updater leaves them to it", len(recPods)-len(pods)))
	}
	all, candidates := update.Plan(v, pods, update.PlanOptions{
		Thresholds: o.Priority, PerVPAConfig: o.PerVPAConfig, LimitRanges: ix.LimitRangesIn(v.Namespace), Now: ix.Now,
	})
	byPod := map[*corev1.Pod]*update.PodPlan{}
	for _, p := range all {
		byPod[p.Pod] = p
	}
	actions := map[*corev1.Pod]string{}
	if u.Acts {
		restr := update.NewRestrictions(update.RestrictionOptions{Config: o.Restriction, VPA: v, Counter: update.WorkloadCounter{Workloads: ix.Workloads}, Now: ix.Now}, pods)
		for key, why := range restr.Skipped {
			u.Notes = append(u.Notes, fmt.Sprintf("%s %s left alone: %s", key.Kind, key.Name, why))
		}
		inPlace := mode == vpav1.UpdateModeInPlace || mode == vpav1.UpdateModeInPlaceOrRecreate
		for _, c := range candidates { // the updater's order
			actions[c.Pod] = act(ix, restr, c, mode, inPlace, o)
		}
		if o.EvictionRateLimit > 0 {
			u.Notes = append(u.Notes, fmt.Sprintf("evictions and resizes wait for the rate limiter (%.3g per second, burst %d)", o.EvictionRateLimit, o.EvictionRateBurst))
		}
		n := len(candidates)
		u.Summary = fmt.Sprintf("%d of %d pods are candidates for an update", n, len(pods))
	}
	var out []Pod
	for _, pod := range pods {
		p := Pod{Name: pod.Name, Phase: string(pod.Status.Phase)}
		if pod.Status.StartTime != nil {
			p.Age = ix.Now.Sub(pod.Status.StartTime.Time).Round(time.Second).String()
		}
		plan := byPod[pod]
		for _, c := range pod.Spec.Containers {
			p.Containers = append(p.Containers, podContainer(pod, c, plan))
		}
		if plan != nil {
			p.Decision = decisionText(plan, o)
			p.ResourceDiff = round(plan.Decision.ResourceDiff, 3)
		}
		switch a, ok := actions[pod]; {
		case ok:
			p.Action = a
		case !u.Acts:
			p.Action = "none: " + u.Summary
		case plan == nil:
			p.Action = "none"
		case plan.Outcome == update.LimitRangeConflict:
			p.Action = "none: the API server would refuse the pod with the recommendation, so it keeps its requests: " + plan.Plan.Why()
		case plan.Outcome == update.EvictionRequirementsNotMet:
			p.Action = "none: the VPA's evictionRequirements are not met"
		default:
			p.Action = "none: the rule keeps the pod"
		}
		out = append(out, p)
	}
	return out, u
}

// act is what the updater does with one candidate, given the group's
// restriction (updated as the updater updates it), as its loop does.
func act(ix *snapshot.Index, restr *update.Restrictions, c *update.PodPlan, mode vpav1.UpdateMode, inPlace bool, o Options) string {
	if inPlace {
		switch restr.CanInPlaceUpdate(c.Pod, mode, true, false) {
		case update.InPlaceApproved:
			restr.RecordInPlaceUpdate(c.Pod)
			return "resize in place to " + describe(c.Requests)
		case update.InPlaceDeferred:
			if mode == vpav1.UpdateModeInPlace && update.Resizing(c.Pod) {
				return "patch the pending resize to " + describe(c.Requests)
			}
			return "wait: " + groupWhy(restr, c.Pod)
		case update.InPlaceInfeasible:
			return "wait: the node cannot fit the resize (Infeasible)"
		case update.InPlaceEvict:
			// Falls through to eviction below.
		}
	}
	if !restr.CanEvict(c.Pod) {
		return "wait: " + groupWhy(restr, c.Pod)
	}
	restr.RecordEviction(c.Pod)
	if pdb := blockingPDB(ix.PDBs, c.Pod); pdb != nil {
		return fmt.Sprintf("evict, refused by PodDisruptionBudget %s (disruptionsAllowed %d); retried every loop", pdb.Name, pdb.Status.DisruptionsAllowed)
	}
	return "evict; the admission controller sets " + describe(c.Requests)
}

func groupWhy(restr *update.Restrictions, pod *corev1.Pod) string {
	g := restr.Group(pod)
	if g == nil {
		return "its controller's replica group is left alone (see notes)"
	}
	return fmt.Sprintf("no more disruption allowed in its replica group this loop (%d configured, %d running, tolerance %d, %d updated in this loop)",
		g.Configured, g.Running(), g.EvictionTolerance, g.Evicted+g.InPlaceInitiated)
}

// blockingPDB returns a PDB selecting the pod that allows no disruption.
func blockingPDB(pdbs []*policyv1.PodDisruptionBudget, pod *corev1.Pod) *policyv1.PodDisruptionBudget {
	for _, pdb := range pdbs {
		if pdb.Namespace != pod.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if pdb.Status.DisruptionsAllowed < 1 {
			return pdb
		}
	}
	return nil
}

func decisionText(p *update.PodPlan, o Options) string {
	d := p.Decision
	switch d.Reason {
	case update.ReasonOutsideRange:
		return "update: a request is outside the recommended bounds"
	case update.ReasonQuickOOM:
		return "update: a container was OOM-killed soon after it started"
	case update.ReasonLongLivedDrift:
		return fmt.Sprintf("update: running over %s with requests %.0f%% away from the target", o.Priority.PodLifetimeUpdateThreshold, d.ResourceDiff*100)
	case update.ReasonNoStartTime:
		return "keep: within bounds, and the pod has not started"
	case update.ReasonTooYoung:
		return fmt.Sprintf("keep: within bounds, and younger than %s", o.Priority.PodLifetimeUpdateThreshold)
	case update.ReasonBelowThreshold:
		return fmt.Sprintf("keep: within bounds, and the change (%.0f%%) is below %.0f%%", d.ResourceDiff*100, o.Priority.PodUpdateThreshold*100)
	case update.ReasonNoChange:
		return "keep: OOM-killed, but the recommendation equals the requests"
	}
	return string(d.Reason)
}

func podContainer(pod *corev1.Pod, c corev1.Container, plan *update.PodPlan) PodContainer {
	pc := PodContainer{Name: c.Name, Requests: quantities(currentRequests(pod, c))}
	if plan == nil {
		return pc
	}
	for _, in := range plan.Input.Containers {
		if in.Name != c.Name || !in.HasRecommendation {
			continue
		}
		pc.Target, pc.LowerBound, pc.UpperBound = quantities(in.Target), quantities(in.LowerBound), quantities(in.UpperBound)
		pc.Capped = plan.CapNotes[c.Name]
		pc.Position = map[string]string{}
		for r, t := range in.Target {
			req, ok := in.Requests[r]
			lo, hasLo := in.LowerBound[r]
			hi, hasHi := in.UpperBound[r]
			switch {
			case !ok:
				pc.Position[string(r)] = "no request"
			case hasLo && req.Cmp(lo) < 0:
				pc.Position[string(r)] = "below lower bound"
			case hasHi && req.Cmp(hi) > 0:
				pc.Position[string(r)] = "above upper bound"
			case req.Cmp(t) == 0:
				pc.Position[string(r)] = "at target"
			default:
				pc.Position[string(r)] = "within bounds"
			}
		}
	}
	return pc
}

// currentRequests are the requests the container runs with, as
// update.PodInputFor reads them.
func currentRequests(pod *corev1.Pod, c corev1.Container) corev1.ResourceList {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == c.Name && s.Resources != nil {
			return s.Resources.Requests
		}
	}
	return c.Resources.Requests
}

func describe(requests map[string]corev1.ResourceList) string {
	names := make([]string, 0, len(requests))
	for n := range requests {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		l := requests[n]
		var rs []string
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[r]; ok {
				rs = append(rs, string(r)+"="+q.String())
			}
		}
		parts = append(parts, n+": "+strings.Join(rs, ","))
	}
	if len(parts) == 0 {
		return "the recommendation"
	}
	return strings.Join(parts, "; ")
}
