package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// TestRecommendedWatchCountsEachVPAOnce: the time is taken when the last
// VPA gets its first recommendation; VPAs without one, repeated updates of
// one VPA and objects of other types do not count.
func TestRecommendedWatchCountsEachVPAOnce(t *testing.T) {
	w := &recommendedWatch{want: 2, start: time.Now().Add(-time.Minute), has: map[string]bool{}}
	vpa := func(name string, rec bool) *vpav1.VerticalPodAutoscaler {
		v := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if rec {
			v.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{ContainerName: "app"}}}
		}
		return v
	}
	for _, o := range []any{vpa("a", false), vpa("a", true), vpa("a", true), "not a VPA", vpa("b", false)} {
		w.observe(o)
	}
	if got := w.allRecommended(); got != 0 {
		t.Fatalf("allRecommended = %v with one of two VPAs recommended", got)
	}
	w.observe(vpa("b", true))
	if got := w.allRecommended(); got < time.Minute {
		t.Fatalf("allRecommended = %v once both are recommended, want about a minute", got)
	}
}
