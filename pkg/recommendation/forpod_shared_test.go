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
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
)

// TestForPodSharedMatchesForPod checks that ForPodShared gives ForPod's
// result and, whatever capping does, leaves the VPA as it was.
func TestForPodSharedMatchesForPod(t *testing.T) {
	requestsOnly := ptr(vpav1.ContainerControlledValuesRequestsOnly)
	cpuOnly := &[]corev1.ResourceName{corev1.ResourceCPU}
	tests := map[string]struct {
		pod *corev1.Pod
		vpa *vpav1.VerticalPodAutoscaler
		lr  limitrange.Merged
	}{
		"nothing capped": {
			pod: pod(container("a", rl("100m", "100Mi"), rl("200m", "300Mi"))),
			vpa: vpaWith(nil, recs(target("a", rl("250m", "200Mi")))),
		},
		"min and max allowed": {
			pod: pod(container("a", nil, nil), container("b", nil, nil)),
			vpa: vpaWith(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MinAllowed: rl("50m", ""), MaxAllowed: rl("", "1Gi")}),
				recs(target("a", rl("10m", "10Gi")), target("b", rl("10m", "10Gi")))),
		},
		"controlled resources": {
			pod: pod(container("a", rl("100m", "100Mi"), nil)),
			vpa: vpaWith(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", ControlledResources: cpuOnly}), recs(target("a", rl("250m", "200Mi")))),
		},
		"RequestsOnly capped to the limit": {
			pod: pod(container("a", rl("100m", ""), rl("300m", ""))),
			vpa: vpaWith(policy(vpav1.ContainerResourcePolicy{ContainerName: "*", ControlledValues: requestsOnly}), recs(target("a", rl("1", "")))),
		},
		"container LimitRange": {
			pod: pod(container("a", nil, nil), container("b", rl("100m", ""), rl("200m", ""))),
			vpa: vpaWith(nil, recs(target("a", rl("1m", "1Mi")), target("b", rl("5", "")))),
			lr:  limitrange.Merged{Container: &corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("10m", "4Mi"), Max: rl("2", ""), Default: rl("500m", "")}},
		},
		"pod LimitRange max": {
			pod: pod(container("a", rl("1", ""), rl("2", "")), container("b", rl("1", ""), rl("2", ""))),
			vpa: vpaWith(nil, recs(target("a", rl("1", "")), target("b", rl("1", "")))),
			lr:  limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("2", "")}},
		},
		"pod LimitRange min": {
			pod: pod(container("a", rl("", "100Mi"), rl("", "100Mi")), container("b", rl("", "100Mi"), rl("", "100Mi"))),
			vpa: vpaWith(nil, recs(target("a", rl("", "10Mi")), target("b", rl("", "30Mi")))),
			lr:  limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: rl("", "80Mi")}},
		},
		"empty resource name": {
			pod: pod(container("a", nil, nil)),
			vpa: vpaWith(nil, recs(target("a", corev1.ResourceList{"": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1")}))),
		},
		"container listed twice": {
			pod: pod(container("a", nil, nil), container("a", rl("1", ""), nil)),
			vpa: vpaWith(policy(vpav1.ContainerResourcePolicy{ContainerName: "a", MaxAllowed: rl("500m", "")}), recs(target("a", rl("2", "")))),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.vpa.DeepCopy()
			want := ForPod(tc.pod, tc.vpa, tc.lr)
			got := ForPodShared(tc.pod, tc.vpa, tc.lr)
			if !equality.Semantic.DeepEqual(tc.vpa, before) {
				t.Errorf("the VPA changed:\n%v\nwas\n%v", tc.vpa.Status, before.Status)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d entries, want %d", len(got), len(want))
			}
			for i := range got {
				if !equalLists(got[i].Requests, want[i].Requests) || !equalLists(got[i].Limits, want[i].Limits) ||
					(got[i].Limits == nil) != (want[i].Limits == nil) || !reflect.DeepEqual(got[i].Notes, want[i].Notes) {
					t.Errorf("container %d: got %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}
