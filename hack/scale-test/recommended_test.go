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

package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// TestRecommendedWatchCountsEachVPAOnce: the time is taken when the last
// VPA gets its first recommendation; VPAs without one, repeated updates of
// one VPA, VPAs of other namespaces and objects of other types do not
// count; VPAs of one name in two of the test's namespaces are two.
func TestRecommendedWatchCountsEachVPAOnce(t *testing.T) {
	w := &recommendedWatch{want: 3, start: time.Now().Add(-time.Minute), has: map[string]bool{},
		namespaces: map[string]bool{"s-0": true, "s-1": true}}
	vpaIn := func(ns, name string, rec bool) *vpav1.VerticalPodAutoscaler {
		v := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if rec {
			v.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{ContainerName: "app"}}}
		}
		return v
	}
	vpa := func(name string, rec bool) *vpav1.VerticalPodAutoscaler { return vpaIn("s-0", name, rec) }
	for _, o := range []any{vpa("a", false), vpa("a", true), vpa("a", true), "not a VPA", vpa("b", false),
		vpaIn("s-1", "a", true), vpaIn("other", "b", true)} {
		w.observe(o)
	}
	if got := w.allRecommended(); got != 0 {
		t.Fatalf("allRecommended = %v with two of three VPAs recommended", got)
	}
	w.observe(vpa("b", true))
	if got := w.allRecommended(); got < time.Minute {
		t.Fatalf("allRecommended = %v once all are recommended, want about a minute", got)
	}
}
