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

package update

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// ThresholdsForVPA returns cfg with the VPA's evictAfterOOMSeconds applied
// when per-VPA configuration is enabled.
func ThresholdsForVPA(cfg Thresholds, vpa *vpav1.VerticalPodAutoscaler, perVPAConfig bool) Thresholds {
	if perVPAConfig && vpa != nil && vpa.Spec.UpdatePolicy != nil && vpa.Spec.UpdatePolicy.EvictAfterOOMSeconds != nil {
		cfg.EvictAfterOOMThreshold = time.Duration(*vpa.Spec.UpdatePolicy.EvictAfterOOMSeconds) * time.Second
	}
	return cfg
}

// PodInputFor converts a pod and its (already capped) recommendation into
// the rule's input. observed names the containers to consider (the pod's
// vpaObservedContainers annotation); nil means every container. Requests are
// the ones the container runs with: status.containerStatuses[].resources when
// the kubelet reports them (a pending or infeasible resize has not changed
// them yet), else the pod spec.
func PodInputFor(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, observed []string, now time.Time) PodInput {
	var in PodInput
	if pod.Status.StartTime != nil {
		age := now.Sub(pod.Status.StartTime.Time)
		in.Age = &age
	}
	var keep map[string]bool
	if observed != nil {
		keep = make(map[string]bool, len(observed))
		for _, name := range observed {
			keep[name] = true
		}
	}
	for _, container := range pod.Spec.Containers {
		if keep != nil && !keep[container.Name] {
			continue
		}
		c := ContainerInput{
			Name:       container.Name,
			Requests:   currentRequests(pod, container),
			ScalingOff: vpav1.GetContainerResourcePolicy(container.Name, policy).ScalingMode() == vpav1.ContainerScalingModeOff,
		}
		if r := containerRecommendation(rec, container.Name); r != nil {
			c.HasRecommendation = true
			c.Target, c.LowerBound, c.UpperBound = r.Target, r.LowerBound, r.UpperBound
		}
		c.OOMKilledAfter, c.OOMKilledAgo = lastOOM(pod, container.Name, now)
		in.Containers = append(in.Containers, c)
	}
	return in
}

// DecidePod applies the rule to a pod; see PodInputFor for the arguments.
func DecidePod(cfg Thresholds, pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, observed []string, now time.Time) Decision {
	return Decide(cfg, PodInputFor(pod, rec, policy, observed, now))
}

func containerRecommendation(rec *vpav1.RecommendedPodResources, name string) *vpav1.RecommendedContainerResources {
	if rec == nil {
		return nil
	}
	for i := range rec.ContainerRecommendations {
		if rec.ContainerRecommendations[i].ContainerName == name {
			return &rec.ContainerRecommendations[i]
		}
	}
	return nil
}

// lastOOM returns, when the container's last termination was an OOM kill,
// how long it had run and how long ago, at now, it ended.
func lastOOM(pod *corev1.Pod, name string, now time.Time) (ran, ago *time.Duration) {
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name != name {
			continue
		}
		t := status.LastTerminationState.Terminated
		if t == nil || t.Reason != "OOMKilled" {
			return nil, nil
		}
		d := t.FinishedAt.Sub(t.StartedAt.Time)
		since := now.Sub(t.FinishedAt.Time)
		return &d, &since
	}
	return nil, nil
}

func currentRequests(pod *corev1.Pod, container corev1.Container) corev1.ResourceList {
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name == container.Name && status.Resources != nil {
			return status.Resources.Requests
		}
	}
	return container.Resources.Requests
}
