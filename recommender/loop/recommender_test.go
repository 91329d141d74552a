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
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/status"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

const mi = 1024 * 1024

func targetOf(t *testing.T, v *vpav1.VerticalPodAutoscaler, container string) (cpu, mem string) {
	t.Helper()
	if v.Status.Recommendation == nil {
		t.Fatalf("VPA %s has no recommendation; status %+v", v.Name, v.Status)
	}
	for _, r := range v.Status.Recommendation.ContainerRecommendations {
		if r.ContainerName == container {
			c, m := r.Target[corev1.ResourceCPU], r.Target[corev1.ResourceMemory]
			return c.String(), m.String()
		}
	}
	t.Fatalf("no recommendation for container %s in %+v", container, v.Status.Recommendation)
	return "", ""
}

func containers(v *vpav1.VerticalPodAutoscaler) []string {
	var out []string
	if v.Status.Recommendation != nil {
		for _, r := range v.Status.Recommendation.ContainerRecommendations {
			out = append(out, r.ContainerName)
		}
	}
	return out
}

func TestSteadyUsageRecommendation(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	h.loops(10)
	v := h.vpa("ns", "web")
	cpu, mem := targetOf(t, v, "app")
	if cpu != "350m" || mem != "250Mi" {
		t.Errorf("target = %s / %s, want 350m / 250Mi", cpu, mem)
	}
	if c := h.condition(v, vpav1.RecommendationProvided); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("RecommendationProvided = %+v, want True", c)
	}
	if c := h.condition(v, vpav1.LowConfidence); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("LowConfidence = %+v, want True with 10 minutes of history", c)
	}
	if v.Status.ObservedGeneration == nil || *v.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration = %v, want 1", v.Status.ObservedGeneration)
	}
	// Conditions are sorted by type.
	for i := 1; i < len(v.Status.Conditions); i++ {
		if v.Status.Conditions[i-1].Type >= v.Status.Conditions[i].Type {
			t.Errorf("conditions not sorted: %v", v.Status.Conditions)
		}
	}
}

func TestStatusWrittenOnlyWhenChanged(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	h.loops(24*60 + 10) // over a day of history: LowConfidence has cleared and the bounds move slowly
	before := h.count("patch", "verticalpodautoscalers/status")
	h.loops(60)
	// Steady usage: targets stay put and the bounds drift by less than the
	// tolerance, so only the VPA's bounds slot (every 10 minutes) writes.
	if got := h.count("patch", "verticalpodautoscalers/status") - before; got > 6 {
		t.Errorf("status patches in an hour of steady usage = %d, want at most 6", got)
	}
	before = h.count("patch", "verticalpodautoscalers/status")
	h.cpu["web-1"] = 2000 // a jump moves the percentile
	h.loops(5)
	if got := h.count("patch", "verticalpodautoscalers/status") - before; got == 0 {
		t.Error("no status patch after usage changed")
	}
}

func TestConditions(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "nopods", "nopods")
	h.addVPA("ns", "child", "child-rs")
	h.loop()
	v := h.vpa("ns", "nopods")
	if c := h.condition(v, vpav1.NoPodsMatched); c == nil || c.Status != corev1.ConditionTrue || c.Message != status.MessageNoPodsMatched {
		t.Errorf("NoPodsMatched = %+v", c)
	}
	rp := h.condition(v, vpav1.RecommendationProvided)
	if rp == nil || rp.Status != corev1.ConditionFalse || rp.Reason != status.ReasonNoPodsMatched {
		t.Fatalf("RecommendationProvided = %+v, want False/NoPodsMatched", rp)
	}
	firstTransition := rp.LastTransitionTime
	u := h.condition(h.vpa("ns", "child"), vpav1.ConfigUnsupported)
	if u == nil || u.Status != corev1.ConditionTrue ||
		u.Message != "The target apps/v1.Deployment/child-rs has a parent controller but it should point to a topmost well-known or scalable controller" {
		t.Errorf("ConfigUnsupported = %+v", u)
	}
	// Unchanged status keeps its transition time.
	h.clk.Step(time.Hour)
	h.loop()
	if rp := h.condition(h.vpa("ns", "nopods"), vpav1.RecommendationProvided); !rp.LastTransitionTime.Equal(&firstTransition) {
		t.Errorf("transition time moved from %v to %v without a change", firstTransition, rp.LastTransitionTime)
	}
	// Pods appear: NoPodsMatched goes away, RecommendationProvided flips.
	h.addPod("ns", "nopods-1", "nopods", 100, 100*mi, "app")
	h.loop()
	v = h.vpa("ns", "nopods")
	if c := h.condition(v, vpav1.NoPodsMatched); c != nil {
		t.Errorf("NoPodsMatched still present: %+v", c)
	}
	if rp := h.condition(v, vpav1.RecommendationProvided); rp.Status != corev1.ConditionTrue || rp.LastTransitionTime.Equal(&firstTransition) {
		t.Errorf("RecommendationProvided = %+v, want True with a new transition time", rp)
	}
}

// TestLimitRangeConflictCondition: when the recommendation cannot be given
// to the VPA's pods without the API server refusing them, the status says
// so; it goes away once the pods can take it.
func TestLimitRangeConflictCondition(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	tight := func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("150Mi")}}
	}
	h.addPodWith("ns", "web-1", "web", 100, 500*mi, tight, "app")
	h.loop()
	c := h.condition(h.vpa("ns", "web"), vpav1.LimitRangeConflict)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != status.ReasonPodsKeepRequests ||
		!strings.Contains(c.Message, "must be greater than or equal to aggregate container requests") {
		t.Fatalf("LimitRangeConflict = %+v, want True/%s saying why", c, status.ReasonPodsKeepRequests)
	}
	h.deletePod("ns", "web-1")
	h.addPodWith("ns", "web-2", "web", 100, 500*mi, func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Gi")}}
	}, "app")
	h.loop()
	if c := h.condition(h.vpa("ns", "web"), vpav1.LimitRangeConflict); c != nil {
		t.Errorf("LimitRangeConflict = %+v after the pods can take the recommendation", c)
	}
	// A LimitRange the policy conflicts with (the pod has the limit it
	// would get from the LimitRange's default).
	h.limitRanges = map[string]limitrange.Merged{"ns": limitrange.Merge([]*corev1.LimitRange{{
		ObjectMeta: metav1.ObjectMeta{Name: "max"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
	}})}
	h.addVPA("ns", "policy", "policy", func(v *vpav1.VerticalPodAutoscaler) {
		v.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{
			ContainerName: "*", MinAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}}}
	})
	h.addPodWith("ns", "policy-1", "policy", 100, 500*mi, func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	}, "app")
	h.loop()
	if c := h.condition(h.vpa("ns", "policy"), vpav1.LimitRangeConflict); c == nil || c.Reason != status.ReasonLimitRangeOverridesPolicy {
		t.Errorf("LimitRangeConflict = %+v, want %s", c, status.ReasonLimitRangeOverridesPolicy)
	}
}

func TestFiltering(t *testing.T) {
	tests := map[string]struct {
		name       string
		ns         namespaces.Options
		vpaNS      string
		recommends []string
		handled    bool
	}{
		"default handles unnamed":           {name: "default", vpaNS: "a", handled: true},
		"default handles default":           {name: "default", vpaNS: "a", recommends: []string{"default"}, handled: true},
		"default skips other":               {name: "default", vpaNS: "a", recommends: []string{"other"}},
		"named skips unnamed":               {name: "mine", vpaNS: "a"},
		"named handles its name":            {name: "mine", vpaNS: "a", recommends: []string{"mine"}, handled: true},
		"namespace flag includes":           {name: "default", ns: namespaces.Options{Namespace: "a"}, vpaNS: "a", handled: true},
		"namespace flag excludes":           {name: "default", ns: namespaces.Options{Namespace: "a"}, vpaNS: "b"},
		"ignored namespace":                 {name: "default", ns: namespaces.Options{Ignored: "x, b"}, vpaNS: "b"},
		"namespace not in the ignored list": {name: "default", ns: namespaces.Options{Ignored: "x,b"}, vpaNS: "a", handled: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.RecommenderName = tc.name
				c.Namespaces = tc.ns.Filter()
			})
			var opts []vpaOpt
			for _, r := range tc.recommends {
				opts = append(opts, withRecommender(r))
			}
			h.addVPA(tc.vpaNS, "web", "web", opts...)
			h.addPod(tc.vpaNS, "web-1", "web", 300, 200*mi, "app")
			h.loops(2)
			got := h.vpa(tc.vpaNS, "web").Status.Recommendation != nil
			if got != tc.handled {
				t.Errorf("handled = %v, want %v", got, tc.handled)
			}
			if !tc.handled && h.count("patch", "verticalpodautoscalers/status") != 0 {
				t.Error("wrote the status of a VPA it does not handle")
			}
		})
	}
}

func TestMetricsAskedOnlyForTrackedPods(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("a", "web", "web")
	h.addPod("a", "web-1", "web", 300, 200*mi, "app")
	h.addPod("a", "batch-1", "batch", 300, 200*mi, "app") // no VPA
	h.addPod("b", "web-1", "web", 300, 200*mi, "app")     // another namespace's web, no VPA
	h.loops(1)
	if h.keep == nil {
		t.Fatal("the loop asked for every pod's usage")
	}
	for pod, want := range map[types.NamespacedName]bool{
		{Namespace: "a", Name: "web-1"}:   true,
		{Namespace: "a", Name: "batch-1"}: false,
		{Namespace: "b", Name: "web-1"}:   false,
	} {
		if got := h.keep(pod); got != want {
			t.Errorf("keep(%s) = %v, want %v", pod, got, want)
		}
	}
}

func TestRemovedContainerLeavesRecommendation(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app", "sidecar")
	h.loops(3)
	if got := containers(h.vpa("ns", "web")); len(got) != 2 {
		t.Fatalf("containers = %v, want app and sidecar", got)
	}
	// Rollout without the sidecar: the new pod replaces the old one.
	h.deletePod("ns", "web-1")
	h.addPod("ns", "web-2", "web", 300, 200*mi, "app")
	h.loop()
	if got := containers(h.vpa("ns", "web")); len(got) != 1 || got[0] != "app" {
		t.Errorf("containers after removal = %v, want [app]", got)
	}
	// With one container left the pod minimum is not split any more.
	if _, mem := targetOf(t, h.vpa("ns", "web"), "app"); mem != "250Mi" {
		t.Errorf("memory target = %s, want the whole 250Mi pod minimum", mem)
	}
	// Scaled to zero: the last recommendation stays for the next pod.
	h.deletePod("ns", "web-2")
	h.loop()
	if got := containers(h.vpa("ns", "web")); len(got) != 1 {
		t.Errorf("containers with no pods = %v, want the last recommendation kept", got)
	}
}

func TestInitContainersAndMetricsOutage(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	obj, _, _ := h.pods.GetByKey("ns/web-1")
	p := *obj.(*input.Pod)
	p.InitContainers = []string{"init"}
	_ = h.pods.Update(&p)
	h.loops(3)
	if got := containers(h.vpa("ns", "web")); len(got) != 1 || got[0] != "app" {
		t.Errorf("containers = %v, want only app (init containers excluded)", got)
	}
	before := h.vpa("ns", "web").Status
	h.metricErr = errors.New("metrics-server unavailable")
	h.loops(3)
	if status.StatusChanged(before, vpacache.Compact(before.Recommendation), h.vpa("ns", "web").Status) {
		t.Error("status changed during a metrics-server outage")
	}
}

func TestOOMBumpsMemory(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 400*mi, "app")
	h.loops(2)
	h.ooms = []input.OOM{{Pod: podID("ns", "web-1"), Container: "app", Time: h.clk.Now(), Memory: 500 * mi}}
	h.loop()
	_, mem := targetOf(t, h.vpa("ns", "web"), "app")
	q := resource.MustParse(mem)
	// max(500Mi+100Mi, 500Mi×1.2) = 600Mi, in a bucket above it, plus 15%.
	if q.Value() < 600*mi*115/100 {
		t.Errorf("memory target after OOM = %s, want at least 690Mi", mem)
	}
}

// TestOOMOfDeletedPodCounts: an OOM kill reported in the loop that first
// sees its pod gone still bumps the memory recommendation. Upstream 1.8
// ("defer pod deletion until after metrics are loaded") does the same; 1.7.0
// dropped the pod's containers while loading pods, before the OOMs, and lost
// the kill of a pod deleted right after it (an OOM-killed Job pod, a pod
// evicted for its OOM).
func TestOOMOfDeletedPodCounts(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 400*mi, "app")
	h.addPod("ns", "web-2", "web", 300, 400*mi, "app")
	h.loops(2)
	h.deletePod("ns", "web-1")
	h.ooms = []input.OOM{{Pod: podID("ns", "web-1"), Container: "app", Time: h.clk.Now(), Memory: 500 * mi}}
	h.loop()
	_, mem := targetOf(t, h.vpa("ns", "web"), "app")
	// max(500Mi+100Mi, 500Mi×1.2) = 600Mi, plus the 15% margin.
	if q := resource.MustParse(mem); q.Value() < 600*mi*115/100 {
		t.Errorf("memory target after the deleted pod's OOM = %s, want at least 690Mi", mem)
	}
}

// gatedStatus is a status.Writer whose writes wait at a gate.
type gatedStatus struct {
	status.Writer
	*gate
}

func (g *gatedStatus) WriteStatus(ctx context.Context, v *vpav1.VerticalPodAutoscaler, s vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error) {
	if err := g.pass(ctx); err != nil {
		return nil, err
	}
	return g.Writer.WriteStatus(ctx, v, s)
}

// TestStatusWritesDoNotHoldTheLoop: a loop returns while its status writes
// are blocked (upstream's loop waits for every write, so a backlog of writes
// delays the next samples); a VPA whose write is still running is not
// written again; once it lands, the next loop knows the status it wrote and
// does not write it again.
func TestStatusWritesDoNotHoldTheLoop(t *testing.T) {
	h := newHarness(t, nil)
	w := &gatedStatus{Writer: h.deps.Status, gate: newGate()}
	h.withDeps(func(d *Deps) { d.Status = w })
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	ctx := context.Background()

	h.rec.RunOnce(ctx) // would block here if the loop waited for its writes
	if !h.rec.statuses.Busy(types.NamespacedName{Namespace: "ns", Name: "web"}) {
		t.Fatalf("no status write in flight after the first loop")
	}
	h.clk.Step(time.Minute)
	h.rec.RunOnce(ctx)
	h.clk.Step(time.Minute)
	close(w.open)
	h.rec.WaitWrites()
	if n := w.started.Swap(0); n != 1 {
		t.Fatalf("%d status writes ran, want 1: a VPA with a write in flight was written again", n)
	}
	v := h.vpa("ns", "web")
	if c := h.condition(v, vpav1.RecommendationProvided); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("RecommendationProvided = %+v after the write landed", c)
	}
	// The next loop applies the outcome (and may write the status of the
	// samples taken meanwhile). The lister is never synced here, so the loop
	// after it, at the same time and with nothing new, writes nothing only
	// if it knows what the last write left.
	h.rec.RunOnce(ctx)
	h.rec.WaitWrites()
	w.started.Store(0)
	h.rec.RunOnce(ctx)
	h.rec.WaitWrites()
	if n := w.started.Load(); n != 0 {
		t.Errorf("%d status writes of an unchanged status: the outcome of the last write was not applied", n)
	}
}
