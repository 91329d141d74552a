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

package export

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/kubectl-vpa/replay"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
	"github.com/openvpa/openvpa/recommender/estimator"
)

// Usage is a workload that no VPA targets, with its usage history.
type Usage struct {
	// Kind (as the API spells it: Deployment, StatefulSet, ...), Namespace
	// and Name are the workload's.
	Kind, Namespace, Name string
	// History is the workload's usage history
	// (replay.PrometheusSource.Load).
	History *replay.Workload
	// Source says where the history comes from, and Notes what was
	// computed from it, for the patch's comments.
	Source string
	Notes  []string
}

// Recommender computes the recommendation after a usage history, for the
// given containers (replay.Recommender).
type Recommender interface {
	Recommend(w *replay.Workload, containers []string) estimator.Result
}

// ComputeFromUsage builds a patch for each workload (in the given order)
// from its usage history: rec's recommendation after the history of the
// pod template's containers (a container without history is left out with
// a warning, and the history of containers the template does not have is
// not used), written as Compute writes a VPA's, through the same planning
// under no VPA policy: the namespace's LimitRanges cap it, and limits keep
// their ratio to the requests.
func ComputeFromUsage(ix *snapshot.Index, usages []Usage, rec Recommender, o Options) Result {
	var r Result
	want := map[string]bool{}
	for _, c := range o.Containers {
		want[c] = true
	}
	for _, u := range usages {
		warn := func(format string, args ...any) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s %s/%s: ", u.Kind, u.Namespace, u.Name)+fmt.Sprintf(format, args...))
		}
		obj := ix.Workload(u.Kind, u.Namespace, u.Name)
		if obj == nil {
			warn("not found; skipped")
			continue
		}
		wl, path, tmpl := templateOf(obj)
		if tmpl == nil {
			warn("has no pod template; skipped")
			continue
		}
		names := make([]string, 0, len(tmpl.Spec.Containers))
		for _, c := range tmpl.Spec.Containers {
			names = append(names, c.Name)
		}
		has := historyContainers(u.History)
		for _, n := range names {
			if !has[n] {
				warn("container %s has no usage history; left out", n)
			}
		}
		for _, n := range sortedKeys(has) {
			if !slices.Contains(names, n) {
				warn("the usage history of container %s, which the pod template does not have, is not used", n)
			}
		}
		res := rec.Recommend(u.History, names)
		if len(res.Containers) == 0 {
			warn("none of the pod template's containers (%s) has usage history; skipped", strings.Join(names, ", "))
			continue
		}
		v := &vpav1.VerticalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: u.Namespace, Name: u.Name},
			Spec: vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{
				APIVersion: wl.APIVersion(), Kind: wl.Kind, Name: wl.Name}},
			Status: vpav1.VerticalPodAutoscalerStatus{Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: res.Containers}},
		}
		p, why := patchFor(ix, v, tmpl, o.Value, want)
		if why != "" {
			warn("%s; skipped", why)
			continue
		}
		p.VPA, p.Source = "", u.Source
		p.Workload, p.TemplatePath = wl, path
		p.Notes = append(append([]string(nil), u.Notes...), p.Notes...)
		r.Patches = append(r.Patches, p)
	}
	return r
}

// historyContainers returns the names of the containers w has history of.
func historyContainers(w *replay.Workload) map[string]bool {
	out := map[string]bool{}
	if w == nil {
		return out
	}
	for _, p := range w.Pods {
		for n, c := range p.Containers {
			if len(c.CPU)+len(c.Memory) > 0 {
				out[n] = true
			}
		}
	}
	for _, c := range w.Containers {
		if len(c.Samples) > 0 {
			out[c.Name] = true
		}
	}
	return out
}
