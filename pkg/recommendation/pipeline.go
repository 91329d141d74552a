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

package recommendation

import (
	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
)

// The capping pipeline. Each stage is a function in a file named for it and
// works on what the stage before it left; capStages calls them in order.
//
//	select.go          selectTargets: the containers and resources the
//	                   VPA's policy controls, as working copies
//	limitrange.go      podLimitRange, then containerLimitRange
//	policy.go          policyAllowed: minAllowed and maxAllowed (before the
//	                   LimitRange stages in the fallback order)
//	containerlimit.go  containerLimit: RequestsOnly stays within the limit
//	nodefit.go         nodeFit: the pod fits the largest eligible node
//	                   (Fit.Nodes)
//	proportional.go    proportionalLimits: limits keep their ratio
//
// Cap returns capStages' result; resourcesFor turns it into requests and
// adds the limits. plan.go checks the pod that gives against the API
// server's rules and, if it would be refused, runs the pipeline again in
// the fallback order; then quota.go caps the increase to what the
// namespace's ResourceQuotas leave (Fit.Quota).

// capOptions select what the pipeline does beyond capping every bound.
type capOptions struct {
	// targetOnly caps only Target and leaves the bounds empty.
	targetOnly bool
	// shared (with targetOnly) leaves a Target that capping does not
	// change as the recommendation's own map rather than a copy.
	shared bool
	// policyFirst applies the VPA's minAllowed and maxAllowed before the
	// LimitRanges instead of after them, so that the LimitRanges win. It
	// is the fallback when the upstream order gives a pod the API server
	// would refuse.
	policyFirst bool
	// fit is what the plan must fit besides the LimitRanges.
	fit Fit
}

// capStages runs the capping stages, in order, on rec for pod.
//
// Upstream's order puts the VPA policy after the LimitRanges, so that
// minAllowed and maxAllowed win over them; opts.policyFirst moves it
// before them, so that the LimitRanges win.
func capStages(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, lr limitrange.Merged, opts capOptions) working {
	w := selectTargets(pod, rec, policy, lr, opts)
	if opts.policyFirst {
		policyAllowed(&w)
	}
	podLimitRange(&w)
	containerLimitRange(&w)
	if !opts.policyFirst {
		policyAllowed(&w)
	}
	containerLimit(&w)
	// What a node can hold wins over the policy and the LimitRanges: a
	// pod that fits no node is never scheduled.
	nodeFit(&w)
	return w
}

// Capped is the result of Cap.
type Capped struct {
	// Recommendation holds, in pod container order, one entry per container
	// that has a recommendation, is in scaling mode Auto and exists in the
	// pod. Target, LowerBound and UpperBound are capped; UncappedTarget is
	// copied unchanged.
	Recommendation vpav1.RecommendedPodResources
	// Notes maps a container name to what capped its target, e.g.
	// "cpu capped to maxAllowed".
	Notes map[string][]string
	// Node says how the target was capped to fit a node; nil when it was
	// not.
	Node *NodeCap
}

// Cap applies the pod LimitRange, the container LimitRange, the VPA container
// policies and (for RequestsOnly) the containers' current limits to rec, for
// the given pod. rec may be nil. The inputs are not modified.
//
// Containers without a recommendation count towards a Pod LimitRange with
// their current requests and are scaled with the others (as upstream does),
// but only ForPod returns what they get: Cap's result holds the containers
// the recommendation names.
func Cap(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, lr limitrange.Merged) Capped {
	return CapFit(pod, rec, policy, lr, Fit{})
}

// CapFit is Cap with the node fit stage: the capped fields fit the largest
// node fit.Nodes holds, without the resources fit.Yield leaves to an HPA.
// (The quota is not read: it caps what a pod is given, in PlanForPodFit,
// not the recommendation.)
func CapFit(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, lr limitrange.Merged, fit Fit) Capped {
	out := Capped{Notes: map[string][]string{}}
	if pod == nil || rec == nil {
		return out
	}
	w := capStages(pod, rec, policy, lr, capOptions{fit: Fit{Nodes: fit.Nodes, Yield: fit.Yield}})
	out.Node = w.nodeCap
	for i := range pod.Spec.Containers {
		if w.recs[i] == nil || w.inserted[i] {
			continue
		}
		if w.notes != nil && len(w.notes[i]) > 0 {
			out.Notes[pod.Spec.Containers[i].Name] = w.notes[i]
		}
		out.Recommendation.ContainerRecommendations = append(out.Recommendation.ContainerRecommendations, *w.recs[i])
	}
	return out
}

// resourcesFor runs the whole pipeline for ForPod: the capped targets of
// capStages become each pod container's requests, and proportionalLimits
// adds the limits.
func resourcesFor(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged, opts capOptions) ([]ContainerResources, *NodeCap) {
	w := capStages(pod, vpa.Status.Recommendation, vpa.Spec.ResourcePolicy, lr, opts)
	out := requestsOf(&w)
	proportionalLimits(pod, vpa.Spec.ResourcePolicy, lr, out)
	return out, w.nodeCap
}

// requestsOf returns, per pod container, the capped target as requests and
// the notes on it.
func requestsOf(w *working) []ContainerResources {
	pod := w.pod
	out := make([]ContainerResources, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		// As Cap's result is looked up by container name, a name listed
		// twice takes the first such container's values and the last
		// notes.
		j := firstCapped(pod, w.recs, c.Name)
		if j < 0 {
			continue
		}
		requests := dropEmptyNames(w.recs[j].Target)
		if len(requests) == 0 {
			continue
		}
		out[i].Requests = requests
		out[i].Notes = append(out[i].Notes, lastNotes(pod, w.recs, w.notes, c.Name)...)
	}
	return out
}

func firstCapped(pod *corev1.Pod, recs []*vpav1.RecommendedContainerResources, name string) int {
	for j := range pod.Spec.Containers {
		if recs[j] != nil && pod.Spec.Containers[j].Name == name {
			return j
		}
	}
	return -1
}

func lastNotes(pod *corev1.Pod, recs []*vpav1.RecommendedContainerResources, notes [][]string, name string) []string {
	if notes == nil {
		return nil
	}
	for j := len(pod.Spec.Containers) - 1; j >= 0; j-- {
		if recs[j] != nil && len(notes[j]) > 0 && pod.Spec.Containers[j].Name == name {
			return notes[j]
		}
	}
	return nil
}

func dropEmptyNames(l corev1.ResourceList) corev1.ResourceList {
	if _, ok := l[""]; !ok {
		return l
	}
	out := corev1.ResourceList{}
	for k, v := range l {
		if k != "" {
			out[k] = v
		}
	}
	return out
}
