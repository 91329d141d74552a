package replay

import (
	"time"

	corev1 "k8s.io/api/core/v1"
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

// thresholdRule updates a pod whose request is outside its bounds, or whose
// age is at least minAge and whose requests differ from the targets by at
// least minDiff (summed over resources, relative to the request).
type thresholdRule struct {
	minAge  time.Duration
	minDiff float64
}

// DefaultUpdateRule returns the updater's rule with its default thresholds.
func DefaultUpdateRule() UpdateRule { return thresholdRule{minAge: 12 * time.Hour, minDiff: 0.1} }

func (r thresholdRule) ShouldUpdate(pod PodState) bool {
	totalReq := map[corev1.ResourceName]int64{}
	totalTarget := map[corev1.ResourceName]int64{}
	outside := false
	for _, c := range pod.Containers {
		if !c.HasRecommendation {
			continue
		}
		for name, t := range c.Target {
			totalTarget[name] += t.MilliValue()
			req, ok := c.Requests[name]
			if !ok {
				outside = true
				continue
			}
			totalReq[name] += req.MilliValue()
			if l, ok := c.LowerBound[name]; ok && req.Cmp(l) < 0 {
				outside = true
			}
			if u, ok := c.UpperBound[name]; ok && req.Cmp(u) > 0 {
				outside = true
			}
		}
	}
	if outside {
		return true
	}
	if pod.Age < r.minAge {
		return false
	}
	diff := 0.0
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		t, ok := totalTarget[name]
		if !ok {
			continue
		}
		req := max(float64(totalReq[name]), 1)
		d := req - float64(t)
		if d < 0 {
			d = -d
		}
		diff += d / req
	}
	return diff >= r.minDiff
}
