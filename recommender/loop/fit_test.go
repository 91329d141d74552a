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
	"reflect"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/recommender/status"
)

// fakeNodes answers Deps.Nodes from a list of nodes, as nodefit.Cache does
// without DaemonSet pods.
type fakeNodes struct {
	nodes []*corev1.Node
}

func (f *fakeNodes) rooms(key, _ string) ([]nodefit.Room, bool) {
	cons, err := nodefit.ParseKey(key)
	if err != nil {
		panic(err)
	}
	rooms := []nodefit.Room{}
	for _, n := range f.nodes {
		if cons.Allows(n) {
			a := nodefit.AmountsOf(n.Status.Allocatable)
			rooms = append(rooms, nodefit.Room{Node: n.Name, Allocatable: a, Free: a})
		}
	}
	return nodefit.Frontier(rooms), true
}

func fakeNode(name, cpu, memory string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}},
	}
}

func recOf(v *vpav1.VerticalPodAutoscaler) vpav1.RecommendedContainerResources {
	return v.Status.Recommendation.ContainerRecommendations[0]
}

// TestRecommendationCappedToNode: a recommendation above every node the
// pods may use is capped to the largest (target and bounds; the uncapped
// target stays), the condition names the node and the uncapped values, and
// a larger node added lifts the cap at the next loop. A tainted node the
// pods do not tolerate does not count.
func TestRecommendationCappedToNode(t *testing.T) {
	h := newHarness(t, nil)
	nodes := &fakeNodes{nodes: []*corev1.Node{
		fakeNode("small", "1", "8Gi"),
		fakeNode("tainted", "64", "256Gi", corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}),
	}}
	h.withDeps(func(d *Deps) { d.Nodes = nodes.rooms })
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 4000, 100*mi, "app")
	h.loop()
	v := h.vpa("ns", "web")
	r := recOf(v)
	uncapped := r.UncappedTarget[corev1.ResourceCPU]
	if uncapped.MilliValue() <= 1000 {
		t.Fatalf("uncapped target %s: the test needs one above the small node", uncapped.String())
	}
	if got := r.Target[corev1.ResourceCPU]; got.MilliValue() != 1000 {
		t.Errorf("target cpu %s, want 1 (the small node)", got.String())
	}
	if got := r.UpperBound[corev1.ResourceCPU]; got.MilliValue() > 1000 {
		t.Errorf("upper bound cpu %s above the node", got.String())
	}
	c := h.condition(v, vpav1.RecommendationCappedToNode)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != status.ReasonLargestEligibleNode ||
		!strings.Contains(c.Message, "node small") || !strings.Contains(c.Message, "container app cpu "+uncapped.String()) {
		t.Fatalf("RecommendationCappedToNode = %+v", c)
	}

	nodes.nodes = append(nodes.nodes, fakeNode("large", "16", "64Gi"))
	h.loop()
	v = h.vpa("ns", "web")
	r = recOf(v)
	if got, want := r.Target[corev1.ResourceCPU], r.UncappedTarget[corev1.ResourceCPU]; got.Cmp(want) != 0 {
		t.Errorf("after a large node came, target cpu %s, want the uncapped %s", got.String(), want.String())
	}
	if c := h.condition(v, vpav1.RecommendationCappedToNode); c != nil {
		t.Errorf("RecommendationCappedToNode = %+v after a large node came", c)
	}
}

// TestNodeFitOffGivesUpstreamNumbers: without node fit (--node-fit=false)
// the recommendation is the estimator's, whatever the nodes: the target is
// the uncapped target, and the wide upper bound of a young recommendation
// is left wider than any node. With node fit and a node that holds the
// target, only that upper bound changes.
func TestNodeFitOffGivesUpstreamNumbers(t *testing.T) {
	run := func(nodes *fakeNodes) vpav1.RecommendedContainerResources {
		h := newHarness(t, nil)
		if nodes != nil {
			h.withDeps(func(d *Deps) { d.Nodes = nodes.rooms })
		}
		h.addVPA("ns", "web", "web")
		h.addPod("ns", "web-1", "web", 4000, 3000*mi, "app")
		h.loops(3)
		return recOf(h.vpa("ns", "web"))
	}
	off := run(nil)
	on := run(&fakeNodes{nodes: []*corev1.Node{fakeNode("huge", "256", "1Ti")}})
	if !reflect.DeepEqual(off.Target, off.UncappedTarget) {
		t.Errorf("without node fit, target %v, uncapped %v", off.Target, off.UncappedTarget)
	}
	if up := off.UpperBound[corev1.ResourceCPU]; up.Cmp(resource.MustParse("256")) <= 0 {
		t.Fatalf("upper bound %s: the test needs one wider than the node", up.String())
	}
	if !reflect.DeepEqual(off.Target, on.Target) || !reflect.DeepEqual(off.LowerBound, on.LowerBound) || !reflect.DeepEqual(off.UncappedTarget, on.UncappedTarget) {
		t.Errorf("a node that holds the target changed it: off %+v, on %+v", off, on)
	}
	if up := on.UpperBound[corev1.ResourceCPU]; up.Cmp(resource.MustParse("256")) != 0 {
		t.Errorf("with node fit, upper bound cpu %s, want the node's 256", up.String())
	}
}

// TestNodeFitUsesTheLastPodWhenScaledToZero: a workload scaled to zero
// keeps its capped recommendation and the condition (the last pod stands in
// for the next ones).
func TestNodeFitUsesTheLastPodWhenScaledToZero(t *testing.T) {
	h := newHarness(t, nil)
	nodes := &fakeNodes{nodes: []*corev1.Node{fakeNode("small", "1", "8Gi")}}
	h.withDeps(func(d *Deps) { d.Nodes = nodes.rooms })
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 4000, 100*mi, "app")
	h.loop()
	h.deletePod("ns", "web-1")
	h.loop()
	v := h.vpa("ns", "web")
	if got := recOf(v).Target[corev1.ResourceCPU]; got.MilliValue() != 1000 {
		t.Errorf("with no pods left, target cpu %s, want the cap kept at 1", got.String())
	}
	if c := h.condition(v, vpav1.RecommendationCappedToNode); c == nil {
		t.Error("the condition went with the pods")
	}
}

// TestResourceQuotaConflictCondition: a quota that leaves no room for the
// increase sets the condition; while the quotas are unknown it stays; with
// room it goes.
func TestResourceQuotaConflictCondition(t *testing.T) {
	h := newHarness(t, nil)
	var room *quota.Room
	known := true
	h.withDeps(func(d *Deps) {
		d.Quotas = func(string) (*quota.Room, bool) { return room, known }
	})
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 100, 1000*mi, "app") // asks 100Mi, uses about 1Gi
	room = &quota.Room{
		Requests: nodefit.Amounts{CPU: quota.Unlimited, Memory: 200 * mi},
		Limits:   nodefit.Amounts{CPU: quota.Unlimited, Memory: quota.Unlimited},
		By:       map[corev1.ResourceName]string{corev1.ResourceRequestsMemory: "team"},
	}
	h.loop()
	c := h.condition(h.vpa("ns", "web"), vpav1.ResourceQuotaConflict)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != status.ReasonQuotaCapsIncrease ||
		!strings.Contains(c.Message, "increase of memory capped") || !strings.Contains(c.Message, "ResourceQuota team") {
		t.Fatalf("ResourceQuotaConflict = %+v", c)
	}
	known, room = false, nil
	h.loop()
	if c := h.condition(h.vpa("ns", "web"), vpav1.ResourceQuotaConflict); c == nil {
		t.Fatal("the condition went while the quotas were unknown")
	}
	known, room = true, nil
	h.loop()
	if c := h.condition(h.vpa("ns", "web"), vpav1.ResourceQuotaConflict); c != nil {
		t.Errorf("ResourceQuotaConflict = %+v without a quota", c)
	}
}

// TestHPAYieldCondition: with --yield-to-hpa, an HPA on the utilization of
// cpu makes HPAConflict say cpu is left to it (reason
// ResourceYieldedToHPA); one on an average value is only reported.
func TestHPAYieldCondition(t *testing.T) {
	h := newHarness(t, nil)
	h.withDeps(func(d *Deps) { d.YieldToHPA = true })
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 100, 100*mi, "app")
	metric := func(r corev1.ResourceName, typ autoscalingv2.MetricTargetType) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: r, Target: autoscalingv2.MetricTarget{Type: typ}}}
	}
	h.hpas = map[string][]*autoscalingv2.HorizontalPodAutoscaler{"ns": {{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Metrics: []autoscalingv2.MetricSpec{metric(corev1.ResourceCPU, autoscalingv2.UtilizationMetricType),
				metric(corev1.ResourceMemory, autoscalingv2.AverageValueMetricType)},
		},
	}}}
	h.loop()
	c := h.condition(h.vpa("ns", "web"), vpav1.HPAConflict)
	if c == nil || c.Reason != status.ReasonResourceYieldedToHPA || !strings.HasPrefix(c.Message, "Left to HorizontalPodAutoscaler web-hpa on cpu") ||
		!strings.Contains(c.Message, "web-hpa on memory scales") {
		t.Fatalf("HPAConflict = %+v", c)
	}
	// The recommendation keeps cpu: only its application is left out.
	if _, ok := recOf(h.vpa("ns", "web")).Target[corev1.ResourceCPU]; !ok {
		t.Error("the recommendation lost cpu")
	}
}

// TestHPAScalePointCondition: a VPA in scale-point mode yields cpu to the
// HPA until the HPA carries the updater's record; from then on HPAConflict
// says the scale point is kept (reason ScalePointKept).
func TestHPAScalePointCondition(t *testing.T) {
	h := newHarness(t, nil)
	h.withDeps(func(d *Deps) { d.YieldToHPA = true })
	h.addVPA("ns", "web", "web", func(v *vpav1.VerticalPodAutoscaler) {
		v.Annotations = map[string]string{hpa.ModeAnnotation: hpa.ModeScalePoint}
	})
	h.addPod("ns", "web-1", "web", 100, 100*mi, "app")
	web := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}}},
		},
	}
	h.hpas = map[string][]*autoscalingv2.HorizontalPodAutoscaler{"ns": {web}}
	h.loop()
	if c := h.condition(h.vpa("ns", "web"), vpav1.HPAConflict); c == nil || c.Reason != status.ReasonResourceYieldedToHPA {
		t.Fatalf("before the record, HPAConflict = %+v", c)
	}
	web.Annotations = map[string]string{hpa.ScalePointAnnotation: `{"vpa":"web","metrics":[{"resource":"cpu","averageUtilization":50,"request":"100m","set":50}]}`}
	h.loop()
	c := h.condition(h.vpa("ns", "web"), vpav1.HPAConflict)
	if c == nil || c.Reason != status.ReasonScalePointKept || !strings.HasPrefix(c.Message, "HorizontalPodAutoscaler web-hpa on cpu keeps its scale point") {
		t.Fatalf("with the record, HPAConflict = %+v", c)
	}
}
