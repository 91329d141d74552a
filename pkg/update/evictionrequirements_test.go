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
	"testing"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func TestMeetsEvictionRequirements(t *testing.T) {
	higher := func(res ...corev1.ResourceName) *vpav1.EvictionRequirement {
		return &vpav1.EvictionRequirement{Resources: res, ChangeRequirement: vpav1.TargetHigherThanRequests}
	}
	lower := func(res ...corev1.ResourceName) *vpav1.EvictionRequirement {
		return &vpav1.EvictionRequirement{Resources: res, ChangeRequirement: vpav1.TargetLowerThanRequests}
	}
	cpu, mem := corev1.ResourceCPU, corev1.ResourceMemory
	withTarget := func(req, target corev1.ResourceList) ContainerInput {
		return ContainerInput{Requests: req, Target: target, HasRecommendation: true}
	}
	tests := map[string]struct {
		reqs       []*vpav1.EvictionRequirement
		containers []ContainerInput
		want       bool
	}{
		"no requirements": {
			containers: []ContainerInput{withTarget(rl("1", "1Gi"), rl("100m", "100Mi"))},
			want:       true,
		},
		"TargetHigherThanRequests blocks a downscale": {
			reqs:       []*vpav1.EvictionRequirement{higher(cpu)},
			containers: []ContainerInput{withTarget(rl("1", "1Gi"), rl("100m", "100Mi"))},
			want:       false,
		},
		"TargetHigherThanRequests admits an upscale": {
			reqs:       []*vpav1.EvictionRequirement{higher(cpu)},
			containers: []ContainerInput{withTarget(rl("100m", "1Gi"), rl("200m", "100Mi"))},
			want:       true,
		},
		"TargetLowerThanRequests admits a downscale": {
			reqs:       []*vpav1.EvictionRequirement{lower(mem)},
			containers: []ContainerInput{withTarget(rl("100m", "1Gi"), rl("200m", "100Mi"))},
			want:       true,
		},
		"equal target meets neither direction": {
			reqs:       []*vpav1.EvictionRequirement{higher(cpu, mem)},
			containers: []ContainerInput{withTarget(rl("100m", "1Gi"), rl("100m", "1Gi"))},
			want:       false,
		},
		"any resource of a requirement is enough": {
			reqs:       []*vpav1.EvictionRequirement{higher(cpu, mem)},
			containers: []ContainerInput{withTarget(rl("100m", "1Gi"), rl("50m", "2Gi"))},
			want:       true,
		},
		"every requirement must hold": {
			reqs:       []*vpav1.EvictionRequirement{higher(cpu), lower(mem)},
			containers: []ContainerInput{withTarget(rl("100m", "1Gi"), rl("200m", "2Gi"))},
			want:       false,
		},
		"any container is enough": {
			reqs: []*vpav1.EvictionRequirement{higher(cpu)},
			containers: []ContainerInput{
				withTarget(rl("1", "1Gi"), rl("100m", "1Gi")),
				withTarget(rl("100m", "1Gi"), rl("1", "1Gi")),
			},
			want: true,
		},
		"containers without a recommendation are skipped": {
			reqs: []*vpav1.EvictionRequirement{higher(cpu)},
			containers: []ContainerInput{
				{Requests: rl("1m", "")},
				withTarget(rl("1", "1Gi"), rl("100m", "1Gi")),
			},
			want: false,
		},
		"a container without a memory request is admitted": {
			reqs:       []*vpav1.EvictionRequirement{higher(cpu)},
			containers: []ContainerInput{withTarget(rl("1", ""), rl("100m", "1Gi"))},
			want:       true,
		},
		"a container without a cpu request is admitted": {
			reqs:       []*vpav1.EvictionRequirement{higher(mem)},
			containers: []ContainerInput{withTarget(rl("", "1Gi"), rl("100m", "100Mi"))},
			want:       true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MeetsEvictionRequirements(tc.reqs, tc.containers); got != tc.want {
				t.Errorf("MeetsEvictionRequirements() = %v, want %v", got, tc.want)
			}
		})
	}
}
