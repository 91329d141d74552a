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

// Package export builds `kubectl vpa export`: each selected VPA's
// recommendation as a patch of its target workload's pod template that sets
// the requests (and the limits, kept in proportion) the admission controller
// would give the workload's pods, for review in Git instead of at admission;
// and the same for workloads without a VPA, from the recommendation the
// recommender's estimator gives after their usage history (ComputeFromUsage).
// Patches come as strategic-merge patches or JSON patches (RFC 6902), as a
// YAML stream or as files with a kustomize Component listing them.
package export

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/target"
)

// Patch formats.
const (
	FormatStrategic = "strategic"
	FormatJSON6902  = "json6902"
)

// Values of the recommendation that can be exported.
const (
	ValueTarget         = "target"
	ValueLowerBound     = "lowerBound"
	ValueUpperBound     = "upperBound"
	ValueUncappedTarget = "uncappedTarget"
)

// Options say what to export.
type Options struct {
	// Format is FormatStrategic or FormatJSON6902.
	Format string
	// Value is the recommendation to write, one of the Value constants.
	Value string
	// Containers, when set, limits the patches to these container names.
	Containers []string
}

// DefaultOptions returns the defaults: strategic-merge patches of the target.
func DefaultOptions() Options {
	return Options{Format: FormatStrategic, Value: ValueTarget}
}

// Validate checks the options.
func (o *Options) Validate() error {
	switch o.Format {
	case FormatStrategic, FormatJSON6902:
	default:
		return fmt.Errorf("--format %q: want %s or %s", o.Format, FormatStrategic, FormatJSON6902)
	}
	switch o.Value {
	case ValueTarget, ValueLowerBound, ValueUpperBound, ValueUncappedTarget:
	default:
		return fmt.Errorf("--value %q: want %s, %s, %s or %s", o.Value, ValueTarget, ValueLowerBound, ValueUpperBound, ValueUncappedTarget)
	}
	for _, c := range o.Containers {
		if c == "" {
			return errors.New("--containers: empty container name")
		}
	}
	return nil
}

// Workload names a patched workload.
type Workload struct {
	Group, Version, Kind string
	Namespace, Name      string
}

// APIVersion is the workload's group/version.
func (w Workload) APIVersion() string {
	if w.Group == "" {
		return w.Version
	}
	return w.Group + "/" + w.Version
}

// Container is what one container of the workload gets.
type Container struct {
	// Index is the container's index in the pod template's containers.
	Index int
	Name  string
	// Requests and Limits are what to set; Limits is empty when the
	// container's limits are left alone.
	Requests, Limits corev1.ResourceList
	// HadRequests and HadLimits say whether the live workload's container
	// sets requests and limits: a JSON patch then sets single entries, and
	// otherwise adds the whole map.
	HadRequests, HadLimits bool
	// Resources is the container's live resources, for a JSON patch that
	// has to add them whole.
	Resources corev1.ResourceRequirements
}

// Patch is one VPA's patch of its target workload, or the patch of a
// workload without a VPA from its usage history (ComputeFromUsage).
type Patch struct {
	VPA string // namespace/name; empty for a patch from usage history
	// Source says where the recommendation comes from when no VPA gives
	// it, for the comments.
	Source   string
	Workload Workload
	// TemplatePath is the JSON pointer of the pod template's spec.
	TemplatePath string
	Containers   []Container
	// Notes say what capped a value or why a limit is left as it was.
	Notes []string
}

// Result is what Compute found: the patches in VPA order and, for the VPAs
// that give none, why.
type Result struct {
	Patches  []Patch
	Warnings []string
}

// Compute builds a patch for each of vpas (in the given order) from the
// snapshot: the VPA's recommendation (the value o.Value names) capped for a
// pod of the target's template by pkg/recommendation, the capping the
// admission controller applies (policy, LimitRanges, proportional limits).
func Compute(ix *snapshot.Index, vpas []*vpav1.VerticalPodAutoscaler, o Options) Result {
	var r Result
	warn := func(v *vpav1.VerticalPodAutoscaler, format string, args ...any) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("VerticalPodAutoscaler %s/%s: ", v.Namespace, v.Name)+fmt.Sprintf(format, args...))
	}
	want := map[string]bool{}
	for _, c := range o.Containers {
		want[c] = true
	}
	seen := map[Workload]string{}
	for _, v := range vpas {
		rec := v.Status.Recommendation
		if rec == nil || len(rec.ContainerRecommendations) == 0 {
			warn(v, "no recommendation yet; skipped")
			continue
		}
		if why, ok := ix.Unresolved[v]; ok {
			warn(v, "%s; skipped", why)
			continue
		}
		t := ix.Targets[v]
		if t == nil {
			warn(v, "no target; skipped")
			continue
		}
		obj := ix.Workload(t.Ref.Kind, v.Namespace, t.Ref.Name)
		if obj == nil {
			warn(v, "target %s %s is not a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob or ReplicationController that could be read; skipped", t.Ref.Kind, t.Ref.Name)
			continue
		}
		wl, path, tmpl := templateOf(obj)
		if tmpl == nil {
			warn(v, "target %s %s has no pod template; skipped", t.Ref.Kind, t.Ref.Name)
			continue
		}
		p, why := patchFor(ix, v, tmpl, o.Value, want)
		if why != "" {
			warn(v, "%s; skipped", why)
			continue
		}
		p.Workload, p.TemplatePath = wl, path
		if other, dup := seen[wl]; dup {
			warn(v, "%s %s/%s is also the target of VerticalPodAutoscaler %s; both patches are written, the later one wins", wl.Kind, wl.Namespace, wl.Name, other)
		}
		seen[wl] = p.VPA
		r.Patches = append(r.Patches, p)
	}
	return r
}

// templateOf returns the workload's identity, the JSON pointer of its pod
// template's spec and the template; a nil template for other objects.
func templateOf(obj runtime.Object) (Workload, string, *corev1.PodTemplateSpec) {
	apps := func(kind string, m metav1.ObjectMeta) Workload {
		return Workload{Group: "apps", Version: "v1", Kind: kind, Namespace: m.Namespace, Name: m.Name}
	}
	const spec = "/spec/template/spec"
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return apps(target.KindDeployment, o.ObjectMeta), spec, &o.Spec.Template
	case *appsv1.StatefulSet:
		return apps(target.KindStatefulSet, o.ObjectMeta), spec, &o.Spec.Template
	case *appsv1.DaemonSet:
		return apps(target.KindDaemonSet, o.ObjectMeta), spec, &o.Spec.Template
	case *appsv1.ReplicaSet:
		return apps(target.KindReplicaSet, o.ObjectMeta), spec, &o.Spec.Template
	case *batchv1.Job:
		return Workload{Group: "batch", Version: "v1", Kind: target.KindJob, Namespace: o.Namespace, Name: o.Name}, spec, &o.Spec.Template
	case *batchv1.CronJob:
		return Workload{Group: "batch", Version: "v1", Kind: target.KindCronJob, Namespace: o.Namespace, Name: o.Name},
			"/spec/jobTemplate/spec/template/spec", &o.Spec.JobTemplate.Spec.Template
	case *corev1.ReplicationController:
		return Workload{Version: "v1", Kind: target.KindReplicationController, Namespace: o.Namespace, Name: o.Name}, spec, o.Spec.Template
	}
	return Workload{}, "", nil
}

// patchFor plans the VPA's recommendation for a pod of the template, as the
// admission controller would for a new pod, and returns what each wanted
// container gets; or why there is nothing to write.
func patchFor(ix *snapshot.Index, v *vpav1.VerticalPodAutoscaler, tmpl *corev1.PodTemplateSpec, value string, want map[string]bool) (Patch, string) {
	pod := podOf(v.Namespace, tmpl)
	vv := withValue(v, value)
	plan := recommendation.PlanForPod(pod, vv, ix.LimitRangesIn(v.Namespace))
	if plan.Conflict != nil && !plan.PolicyOverridden {
		return Patch{}, "the namespace's LimitRanges would refuse a pod with the recommendation (" + plan.Why() + "), so the admission controller leaves pods as they are"
	}
	p := Patch{VPA: v.Namespace + "/" + v.Name}
	if plan.PolicyOverridden {
		p.Notes = append(p.Notes, "the LimitRanges win over the VPA's minAllowed or maxAllowed: "+plan.Why())
	}
	for i, cr := range plan.Containers {
		c := &tmpl.Spec.Containers[i]
		if len(cr.Requests) == 0 || (len(want) > 0 && !want[c.Name]) {
			continue
		}
		p.Containers = append(p.Containers, Container{
			Index: i, Name: c.Name, Requests: cr.Requests, Limits: cr.Limits,
			HadRequests: len(c.Resources.Requests) > 0, HadLimits: len(c.Resources.Limits) > 0,
			Resources: c.Resources,
		})
		for _, n := range cr.Notes {
			p.Notes = append(p.Notes, "container "+c.Name+": "+n)
		}
	}
	if len(p.Containers) == 0 {
		if len(want) > 0 {
			return Patch{}, "no recommended container among --containers " + strings.Join(sortedKeys(want), ",")
		}
		return Patch{}, "the recommendation sets nothing on the target's containers (container policies Off, or containers renamed)"
	}
	return p, ""
}

// podOf is a pod of the template as the admission controller sees it: in
// the namespace, with a request defaulted from its limit where only the
// limit is set (as the API server defaults a pod).
func podOf(namespace string, tmpl *corev1.PodTemplateSpec) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Namespace = namespace
	for i := range pod.Spec.Containers {
		r := &pod.Spec.Containers[i].Resources
		for name, lim := range r.Limits {
			if _, ok := r.Requests[name]; ok {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = lim.DeepCopy()
		}
	}
	return pod
}

// withValue returns a copy of the VPA whose targets are the value to
// export. For the uncapped target the policy's minAllowed and maxAllowed
// are dropped, so that only the LimitRanges (which the API server enforces)
// cap it.
func withValue(v *vpav1.VerticalPodAutoscaler, value string) *vpav1.VerticalPodAutoscaler {
	vv := v.DeepCopy()
	for i := range vv.Status.Recommendation.ContainerRecommendations {
		c := &vv.Status.Recommendation.ContainerRecommendations[i]
		switch value {
		case ValueLowerBound:
			c.Target = c.LowerBound
		case ValueUpperBound:
			c.Target = c.UpperBound
		case ValueUncappedTarget:
			c.Target = c.UncappedTarget
		}
	}
	if value == ValueUncappedTarget && vv.Spec.ResourcePolicy != nil {
		for i := range vv.Spec.ResourcePolicy.ContainerPolicies {
			cp := &vv.Spec.ResourcePolicy.ContainerPolicies[i]
			cp.MinAllowed, cp.MaxAllowed = nil, nil
		}
	}
	return vv
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
