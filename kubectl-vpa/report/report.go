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

// Package report builds `kubectl vpa report`: every VPA in scope with the
// cpu and memory its pods request against what it recommends, the savings
// or shortfall, and flags for what needs a look. It renders as a table,
// JSON, YAML, or a self-contained HTML page.
package report

import (
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
	"github.com/openvpa/openvpa/kubectl-vpa/explain"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/update"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

// Flags of a Row.
const (
	FlagNoRecommendation = "no-recommendation"
	FlagLowConfidence    = "low-confidence"
	FlagClipped          = "clipped"
	FlagNotApplied       = "not-applied"
	FlagOverlap          = "overlap"
	FlagHPAConflict      = "hpa-conflict"
	FlagUnresolved       = "unresolved-target"
	// FlagManaged marks a VPA that a policy or the namespace label made.
	FlagManaged = "managed"
)

// gib is a GiB in bytes.
const gib = 1 << 30

// Report is the outcome; its JSON form is the output of -o json and -o yaml.
type Report struct {
	Generated metav1.Time `json:"generated"`
	// Namespace is the scope; empty for all namespaces.
	Namespace string   `json:"namespace,omitempty"`
	Rows      []Row    `json:"vpas"`
	Totals    Totals   `json:"totals"`
	Warnings  []string `json:"warnings,omitempty"`
}

// Row is one VPA. Requests and recommendations are summed over the VPA's
// pods and its recommended containers, the recommendation capped for each
// pod as the admission controller caps it; cpu in cores, memory in GiB.
type Row struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Target    string `json:"target"`
	Mode      string `json:"mode"`
	Pods      int    `json:"pods"`
	// ManagedBy is what made the VPA when the policy controller manages it:
	// "policy <name>" or the namespace label.
	ManagedBy string `json:"managedBy,omitempty"`

	CPURequested      float64 `json:"cpuRequestedCores"`
	CPURecommended    float64 `json:"cpuRecommendedCores"`
	MemoryRequested   float64 `json:"memoryRequestedGiB"`
	MemoryRecommended float64 `json:"memoryRecommendedGiB"`
	// CPUSavings and MemorySavings are requested minus recommended:
	// positive is what the recommendation would free, negative a
	// shortfall.
	CPUSavings    float64 `json:"cpuSavingsCores"`
	MemorySavings float64 `json:"memorySavingsGiB"`
	// Confidence is the least confidence (days of history) among the
	// containers' checkpoints; nil without checkpoints.
	Confidence *float64 `json:"confidenceDays,omitempty"`
	Flags      []string `json:"flags,omitempty"`
	// Notes say why each flag is set.
	Notes []string `json:"notes,omitempty"`
}

// Totals sum the rows. Savings and shortfall are kept apart: a workload
// that needs more does not cancel one that needs less.
type Totals struct {
	VPAs               int     `json:"vpas"`
	CPURequested       float64 `json:"cpuRequestedCores"`
	CPURecommended     float64 `json:"cpuRecommendedCores"`
	CPUSavings         float64 `json:"cpuSavingsCores"`
	CPUShortfall       float64 `json:"cpuShortfallCores"`
	MemoryRequested    float64 `json:"memoryRequestedGiB"`
	MemoryRecommended  float64 `json:"memoryRecommendedGiB"`
	MemorySavings      float64 `json:"memorySavingsGiB"`
	MemoryShortfall    float64 `json:"memoryShortfallGiB"`
	NotApplied         int     `json:"notApplied"`
	WithoutRecommender int     `json:"withoutRecommendation"`
}

// Compute builds the report of every VPA in the snapshot, sorted by
// namespace and name.
func Compute(ix *snapshot.Index, o explain.Options) *Report {
	return ComputeFor(ix, ix.VPAs, o)
}

// ComputeFor builds the report of the given VPAs of the snapshot (a
// selection), sorted by namespace and name. Overlaps are still found among
// every VPA of the snapshot.
func ComputeFor(ix *snapshot.Index, selected []*vpav1.VerticalPodAutoscaler, o explain.Options) *Report {
	r := &Report{Generated: metav1.NewTime(ix.Now.UTC().Truncate(1e9)), Warnings: ix.Warnings}
	vpas := append([]*vpav1.VerticalPodAutoscaler(nil), selected...)
	sort.Slice(vpas, func(i, j int) bool {
		if vpas[i].Namespace != vpas[j].Namespace {
			return vpas[i].Namespace < vpas[j].Namespace
		}
		return vpas[i].Name < vpas[j].Name
	})
	for _, v := range vpas {
		r.Rows = append(r.Rows, row(ix, v, o))
	}
	t := &r.Totals
	for _, row := range r.Rows {
		t.VPAs++
		t.CPURequested += row.CPURequested
		t.CPURecommended += row.CPURecommended
		t.MemoryRequested += row.MemoryRequested
		t.MemoryRecommended += row.MemoryRecommended
		if row.CPUSavings > 0 {
			t.CPUSavings += row.CPUSavings
		} else {
			t.CPUShortfall -= row.CPUSavings
		}
		if row.MemorySavings > 0 {
			t.MemorySavings += row.MemorySavings
		} else {
			t.MemoryShortfall -= row.MemorySavings
		}
		for _, f := range row.Flags {
			switch f {
			case FlagNotApplied:
				t.NotApplied++
			case FlagNoRecommendation:
				t.WithoutRecommender++
			}
		}
	}
	for _, p := range []*float64{&t.CPURequested, &t.CPURecommended, &t.CPUSavings, &t.CPUShortfall} {
		*p = round(*p, 3)
	}
	for _, p := range []*float64{&t.MemoryRequested, &t.MemoryRecommended, &t.MemorySavings, &t.MemoryShortfall} {
		*p = round(*p, 3)
	}
	return r
}

func row(ix *snapshot.Index, v *vpav1.VerticalPodAutoscaler, o explain.Options) Row {
	r := Row{Namespace: v.Namespace, Name: v.Name, Mode: string(vpav1.GetUpdateMode(v))}
	if v.Spec.TargetRef != nil {
		r.Target = v.Spec.TargetRef.Kind + "/" + v.Spec.TargetRef.Name
	}
	flag := func(f, note string) {
		r.Flags = append(r.Flags, f)
		r.Notes = append(r.Notes, note)
	}
	if r.ManagedBy = policyv1alpha1.ManagedBy(v.Labels); r.ManagedBy != "" {
		flag(FlagManaged, "made by "+r.ManagedBy)
	}
	if why, ok := ix.Unresolved[v]; ok {
		flag(FlagUnresolved, why)
	}
	pods := ix.PodsOf(v)
	r.Pods = len(pods)
	rec := v.Status.Recommendation
	if rec == nil || len(rec.ContainerRecommendations) == 0 {
		flag(FlagNoRecommendation, "the VPA has no recommendation yet")
	}
	// Confidence from the checkpoints, restored into the recommender's model.
	for _, cp := range ix.CheckpointsOf(v) {
		a, err := model.RestoreCheckpoint(o.Model, &cp.Status, ix.Now)
		if err != nil {
			continue
		}
		c := round(a.Confidence(estimator.ConfidenceUnit), 2)
		if r.Confidence == nil || c < *r.Confidence {
			r.Confidence = &c
		}
	}
	switch {
	case hasTrue(v, vpav1.LowConfidence):
		flag(FlagLowConfidence, "LowConfidence: less than a day of history backs the recommendation")
	case r.Confidence != nil && *r.Confidence < 1 && rec != nil:
		flag(FlagLowConfidence, "the checkpoints hold less than a day of history")
	}
	if rec != nil {
		for _, c := range rec.ContainerRecommendations {
			if !sameList(c.Target, c.UncappedTarget) {
				flag(FlagClipped, "container "+c.ContainerName+": target differs from the uncapped target (a policy or global limit)")
				break
			}
		}
	}
	all, _ := update.Plan(v, pods, update.PlanOptions{Thresholds: o.Priority, PerVPAConfig: o.PerVPAConfig, LimitRanges: ix.LimitRangesIn(v.Namespace), Now: ix.Now})
	notApplied := 0
	for _, p := range all {
		if p.Decision.OutsideRecommendedRange {
			notApplied++
		}
		for _, c := range p.Input.Containers {
			if !c.HasRecommendation {
				continue
			}
			if t, ok := c.Target[corev1.ResourceCPU]; ok {
				q := c.Requests[corev1.ResourceCPU]
				r.CPURequested += float64(q.MilliValue()) / 1000
				r.CPURecommended += float64(t.MilliValue()) / 1000
			}
			if t, ok := c.Target[corev1.ResourceMemory]; ok {
				q := c.Requests[corev1.ResourceMemory]
				r.MemoryRequested += float64(q.Value()) / gib
				r.MemoryRecommended += float64(t.Value()) / gib
			}
		}
	}
	if notApplied > 0 {
		flag(FlagNotApplied, plural(notApplied, "pod runs", "pods run")+" with requests outside the recommended bounds")
	}
	if others, _ := ix.Overlaps(v); len(others) > 0 {
		flag(FlagOverlap, "pods also matched by VPA "+strings.Join(others, ", "))
	}
	var names []string
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name)
		}
	}
	if cs := hpa.Conflicts(v, ix.HPAsIn(v.Namespace), names); len(cs) > 0 {
		flag(FlagHPAConflict, "HorizontalPodAutoscaler "+cs[0].String())
	}
	r.CPURequested, r.CPURecommended = round(r.CPURequested, 3), round(r.CPURecommended, 3)
	r.MemoryRequested, r.MemoryRecommended = round(r.MemoryRequested, 3), round(r.MemoryRecommended, 3)
	r.CPUSavings = round(r.CPURequested-r.CPURecommended, 3)
	r.MemorySavings = round(r.MemoryRequested-r.MemoryRecommended, 3)
	return r
}

func hasTrue(v *vpav1.VerticalPodAutoscaler, t vpav1.VerticalPodAutoscalerConditionType) bool {
	for _, c := range v.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func sameList(a, b corev1.ResourceList) bool {
	if len(b) == 0 {
		return true // no uncapped target reported
	}
	for name, q := range b {
		if t, ok := a[name]; !ok || t.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	v := math.Round(x*p) / p
	if v == 0 {
		return 0 // no -0
	}
	return v
}
