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

package replay

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/openvpa/openvpa/pkg/update"
)

// PodContainer is one container of a replayed pod at a decision point.
type PodContainer struct {
	Name string
	// Requests are the requests in force; nil when the pod has none yet.
	Requests corev1.ResourceList
	// HasRecommendation is false when the estimator recommended nothing for
	// the container.
	HasRecommendation              bool
	Target, LowerBound, UpperBound corev1.ResourceList
	// OOMKilledAfter is how long the container ran before its last
	// termination when that was an OOM kill; nil otherwise.
	OOMKilledAfter *time.Duration
}

// PodState is a replayed pod at a decision point.
type PodState struct {
	Containers []PodContainer
	// Age is the time since the pod started or was last updated.
	Age time.Duration
}

// UpdateRule is the updater's decision: whether the pod gets its targets.
type UpdateRule interface {
	ShouldUpdate(pod PodState) bool
}

// updaterRule is the updater's own decision rule (update.Decide): update a pod
// whose request is outside its bounds, or which is at least the lifetime
// threshold old and whose requests differ from the targets by at least the
// update threshold.
type updaterRule struct {
	cfg update.Thresholds
}

// NewUpdateRule returns the updater's rule with the given thresholds: the
// relative change of requests, the pod age before a change within the bounds,
// and the run time below which an OOM kill updates the pod at once.
func NewUpdateRule(updateThreshold float64, lifetimeThreshold, evictAfterOOM time.Duration) UpdateRule {
	cfg := update.DefaultThresholds()
	cfg.PodUpdateThreshold = updateThreshold
	cfg.PodLifetimeUpdateThreshold = lifetimeThreshold
	cfg.EvictAfterOOMThreshold = evictAfterOOM
	return updaterRule{cfg: cfg}
}

// DefaultUpdateRule returns the updater's rule with its default thresholds
// (10%, 12h, 10m).
func DefaultUpdateRule() UpdateRule { return updaterRule{cfg: update.DefaultThresholds()} }

func (r updaterRule) ShouldUpdate(pod PodState) bool {
	age := pod.Age
	in := update.PodInput{Age: &age, Containers: make([]update.ContainerInput, 0, len(pod.Containers))}
	for _, c := range pod.Containers {
		in.Containers = append(in.Containers, update.ContainerInput{
			Name:              c.Name,
			Requests:          c.Requests,
			HasRecommendation: c.HasRecommendation,
			Target:            c.Target,
			LowerBound:        c.LowerBound,
			UpperBound:        c.UpperBound,
			OOMKilledAfter:    c.OOMKilledAfter,
		})
	}
	return update.Decide(r.cfg, in).Update
}
