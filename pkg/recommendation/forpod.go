package recommendation

import (
	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// ContainerResources are the resources to give one container.
type ContainerResources struct {
	// Requests are the capped target; nil when the container is left alone.
	Requests corev1.ResourceList
	// Limits are the proportional limits; nil when limits are left alone
	// (RequestsOnly, or no original or default limit).
	Limits corev1.ResourceList
	// Notes say what capped the target or why a limit could not keep its
	// ratio, e.g. "memory capped to maxAllowed".
	Notes []string
}

// ForPod returns, for each of pod.Spec.Containers (same index), the requests
// and limits the VPA's current recommendation gives it after Cap, with
// proportional limits for RequestsAndLimits. Containers without a
// recommendation get an empty entry. Resources with an empty name are
// dropped. The inputs are not modified.
func ForPod(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr LimitRanges) []ContainerResources {
	return forPod(pod, vpa, lr, false)
}

// ForPodShared is ForPod for callers that only read the result: where
// capping leaves a container's target as it is, its Requests is the VPA's
// own recommendation map rather than a copy, so it must not be modified.
func ForPodShared(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr LimitRanges) []ContainerResources {
	return forPod(pod, vpa, lr, true)
}

func forPod(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr LimitRanges, shared bool) []ContainerResources {
	if pod == nil {
		return nil
	}
	out := make([]ContainerResources, len(pod.Spec.Containers))
	if vpa == nil || vpa.Status.Recommendation == nil {
		return out
	}
	recs, notes := capRecs(pod, vpa.Status.Recommendation, vpa.Spec.ResourcePolicy, lr, true, shared)
	var defaults corev1.ResourceList
	if lr.Container != nil {
		defaults = lr.Container.Default
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		// As Cap's result is looked up by container name, a name listed
		// twice takes the first such container's values and the last
		// notes.
		j := firstCapped(pod, recs, c.Name)
		if j < 0 {
			continue
		}
		requests := dropEmptyNames(recs[j].Target)
		if len(requests) == 0 {
			continue
		}
		out[i].Requests = requests
		out[i].Notes = append(out[i].Notes, lastNotes(pod, recs, notes, c.Name)...)
		cp := vpav1.GetContainerResourcePolicy(c.Name, vpa.Spec.ResourcePolicy)
		if cp.ControlledValuesOrDefault() == vpav1.ContainerControlledValuesRequestsAndLimits {
			limits, notes := ProportionalLimits(c.Resources.Limits, c.Resources.Requests, requests, defaults)
			out[i].Limits = limits
			out[i].Notes = append(out[i].Notes, notes...)
		}
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
