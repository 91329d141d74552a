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

package loop

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

func quotaFit(cpuMilli int64) func(*vpav1.VerticalPodAutoscaler, *corev1.Pod) recommendation.Fit {
	room := &quota.Room{
		Requests: nodefit.Amounts{CPU: cpuMilli, Memory: quota.Unlimited},
		Limits:   nodefit.Amounts{CPU: quota.Unlimited, Memory: quota.Unlimited},
		By:       map[corev1.ResourceName]string{corev1.ResourceRequestsCPU: "team"},
	}
	return func(*vpav1.VerticalPodAutoscaler, *corev1.Pod) recommendation.Fit {
		return recommendation.Fit{Quota: room}
	}
}

// events drains the fake recorder.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestNoEvictionIntoAQuotaRefusal: pods whose update the quota leaves no
// room for are neither evicted (noEvicter fails the test) nor resized, and
// the VPA gets a ResourceQuotaConflict event.
func TestNoEvictionIntoAQuotaRefusal(t *testing.T) {
	for name, mode := range map[string]vpav1.UpdateMode{
		"Recreate":          vpav1.UpdateModeRecreate,
		"InPlaceOrRecreate": vpav1.UpdateModeInPlaceOrRecreate,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.cfg.InPlace = true
			h.vpas = []*vpav1.VerticalPodAutoscaler{newVPA("web", mode)}
			h.pods = []*corev1.Pod{newPod("web", 0, "100m"), newPod("web", 1, "100m"), newPod("web", 2, "100m")}
			h.fit = quotaFit(150) // less than the pods' own 100m plus one more pod's
			h.run()
			if len(h.resizer.resized) != 0 {
				t.Errorf("resized %v", h.resizer.resized)
			}
			ev := h.events()
			if len(ev) == 0 || !strings.Contains(ev[0], recommendation.ReasonResourceQuotaConflict) || !strings.Contains(ev[0], "team") {
				t.Errorf("events %q, want ResourceQuotaConflict naming the quota", ev)
			}
		})
	}
}

// TestFallbackEvictionChecksTheQuota: an in-place resize that fails and
// falls back to eviction does not evict when the replacement would not fit
// the quota while the evicted pod terminates.
func TestFallbackEvictionChecksTheQuota(t *testing.T) {
	h := newHarness(t)
	h.cfg.InPlace = true
	h.vpas = []*vpav1.VerticalPodAutoscaler{newVPA("web", vpav1.UpdateModeInPlaceOrRecreate)}
	h.pods = []*corev1.Pod{newPod("web", 0, "2"), newPod("web", 1, "2"), newPod("web", 2, "2")}
	h.resizer.resizeErr = errors.New("resize refused")
	h.fit = quotaFit(0) // a full quota: the decrease fits in place, no replacement does
	h.run()
	if len(h.resizer.resized) == 0 {
		t.Fatal("no resize was tried")
	}
	found := false
	for _, e := range h.events() {
		found = found || strings.Contains(e, recommendation.ReasonResourceQuotaConflict) && strings.Contains(e, "replacement")
	}
	if !found {
		t.Error("no ResourceQuotaConflict event for the eviction left out")
	}
}
