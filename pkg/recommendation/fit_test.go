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
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
)

const giB = 1 << 30

func nodeRoom(name string, cpuMilli, memGi int64) nodefit.Room {
	a := nodefit.Amounts{CPU: cpuMilli, Memory: memGi * giB}
	return nodefit.Room{Node: name, Allocatable: a, Free: a}
}

func TestNodeFitPlan(t *testing.T) {
	big, small := nodeRoom("big", 4000, 16), nodeRoom("small", 2000, 32)
	withDaemons := nodefit.Room{Node: "busy", Allocatable: nodefit.Amounts{CPU: 8000, Memory: 8 * giB},
		Free: nodefit.Amounts{CPU: 6500, Memory: 6 * giB}}
	initPod := pod(container("app", rl("100m", "100Mi"), nil))
	initPod.Spec.InitContainers = []corev1.Container{container("migrate", rl("3", "1Gi"), nil)}
	sidecarPod := pod(container("app", rl("100m", "100Mi"), nil))
	always := corev1.ContainerRestartPolicyAlways
	sidecarPod.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("1", "")}}}
	podLevel := pod(container("app", rl("100m", "100Mi"), nil))
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("1", "")}
	tests := map[string]struct {
		pod   *corev1.Pod
		rec   *vpav1.RecommendedPodResources
		rooms []nodefit.Room
		want  []corev1.ResourceList // requests per pod container
		node  string                // the NodeCap's node, "" for none
		notes []string              // of the first container
	}{
		"fits: unchanged": {
			pod: pod(container("app", rl("100m", "100Mi"), nil)), rec: recs(target("app", rl("3", "8Gi"))),
			rooms: []nodefit.Room{big, small}, want: []corev1.ResourceList{rl("3", "8Gi")},
		},
		"cpu above every node: capped to the node with most cpu": {
			pod: pod(container("app", rl("100m", "100Mi"), nil)), rec: recs(target("app", rl("8", "8Gi"))),
			rooms: []nodefit.Room{big, small}, want: []corev1.ResourceList{rl("4", "8Gi")}, node: "big",
			notes: []string{"cpu capped to fit node big"},
		},
		"memory above every node: capped to the node with most memory": {
			pod: pod(container("app", rl("100m", "100Mi"), nil)), rec: recs(target("app", rl("1", "40Gi"))),
			rooms: []nodefit.Room{big, small}, want: []corev1.ResourceList{rl("1", "32Gi")}, node: "small",
			notes: []string{"memory capped to fit node small"},
		},
		"DaemonSet pods' requests are not the pod's": {
			pod: pod(container("app", rl("100m", "100Mi"), nil)), rec: recs(target("app", rl("7", "7Gi"))),
			rooms: []nodefit.Room{withDaemons}, want: []corev1.ResourceList{rl("6500m", "6Gi")}, node: "busy",
			notes: []string{"cpu capped to fit node busy", "memory capped to fit node busy"},
		},
		"other containers keep their requests": {
			pod: pod(container("app", rl("100m", "100Mi"), nil), container("log", rl("1", "1Gi"), nil)),
			rec: recs(target("app", rl("6", "1Gi"))), rooms: []nodefit.Room{big},
			want: []corev1.ResourceList{rl("3", "1Gi"), nil}, node: "big",
		},
		"recommended containers share the room in proportion": {
			pod: pod(container("a", rl("100m", "100Mi"), nil), container("b", rl("100m", "100Mi"), nil)),
			rec: recs(target("a", rl("6", "1Gi")), target("b", rl("2", "1Gi"))), rooms: []nodefit.Room{big},
			want: []corev1.ResourceList{rl("3", "1Gi"), rl("1", "1Gi")}, node: "big",
		},
		"memory rounded down to whole Mi": {
			pod:   pod(container("a", rl("100m", "100Mi"), nil), container("b", rl("100m", "100Mi"), nil)),
			rec:   recs(target("a", rl("100m", "20Gi")), target("b", rl("100m", "20Gi"))),
			rooms: []nodefit.Room{nodeRoom("n", 4000, 30)},
			want:  []corev1.ResourceList{rl("100m", "15Gi"), rl("100m", "15Gi")}, node: "n",
		},
		"a resource the recommendation lacks counts as fixed": {
			pod: pod(container("app", rl("3", "100Mi"), nil)), rec: recs(target("app", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("20Gi")})),
			rooms: []nodefit.Room{big}, want: []corev1.ResourceList{rl("", "16Gi")}, node: "big",
		},
		"an init container that needs more than a node leaves nothing to cap": {
			pod: initPod, rec: recs(target("app", rl("8", "1Gi"))),
			rooms: []nodefit.Room{small}, want: []corev1.ResourceList{rl("8", "1Gi")},
		},
		"native sidecars keep their requests": {
			pod: sidecarPod, rec: recs(target("app", rl("8", "1Gi"))),
			rooms: []nodefit.Room{big}, want: []corev1.ResourceList{rl("3", "1Gi")}, node: "big",
		},
		"pod-level cpu request: cpu is not the containers'": {
			pod: podLevel, rec: recs(target("app", rl("900m", "40Gi"))),
			rooms: []nodefit.Room{big}, want: []corev1.ResourceList{rl("900m", "16Gi")}, node: "big",
		},
		"no eligible node: unchanged": {
			pod: pod(container("app", rl("100m", "100Mi"), nil)), rec: recs(target("app", rl("8", "8Gi"))),
			rooms: []nodefit.Room{}, want: []corev1.ResourceList{rl("8", "8Gi")},
		},
		"nodes not checked: unchanged": {
			pod: pod(container("app", rl("100m", "100Mi"), nil)), rec: recs(target("app", rl("8", "8Gi"))),
			want: []corev1.ResourceList{rl("8", "8Gi")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan := PlanForPodFit(tc.pod, vpaWith(nil, tc.rec), limitrange.Merged{}, Fit{Nodes: tc.rooms})
			for i, want := range tc.want {
				if !equalLists(plan.Containers[i].Requests, want) {
					t.Errorf("container %d requests %v, want %v", i, plan.Containers[i].Requests, want)
				}
			}
			switch {
			case tc.node == "" && plan.Node != nil:
				t.Errorf("capped to node %s, want no cap", plan.Node.Node)
			case tc.node != "" && (plan.Node == nil || plan.Node.Node != tc.node):
				t.Errorf("node cap %+v, want node %s", plan.Node, tc.node)
			}
			if tc.notes != nil && !reflect.DeepEqual(plan.Containers[0].Notes, tc.notes) {
				t.Errorf("notes %v, want %v", plan.Containers[0].Notes, tc.notes)
			}
		})
	}
}

func TestNodeFitLimitsFollow(t *testing.T) {
	p := pod(container("app", rl("1", "1Gi"), rl("2", "2Gi")))
	plan := PlanForPodFit(p, vpaWith(nil, recs(target("app", rl("8", "1Gi")))), limitrange.Merged{}, Fit{Nodes: []nodefit.Room{nodeRoom("n", 4000, 16)}})
	if got := plan.Containers[0]; !equalLists(got.Requests, rl("4", "1Gi")) || !equalLists(got.Limits, rl("8", "2Gi")) {
		t.Errorf("got requests %v limits %v, want 4/1Gi and 8/2Gi", got.Requests, got.Limits)
	}
}

func TestCapFitBounds(t *testing.T) {
	p := pod(container("app", rl("100m", "100Mi"), nil))
	rec := recs(vpav1.RecommendedContainerResources{ContainerName: "app",
		LowerBound: rl("1", "1Gi"), Target: rl("3", "2Gi"), UpperBound: rl("12", "4Gi"), UncappedTarget: rl("3", "2Gi")})
	got := CapFit(p, rec, nil, limitrange.Merged{}, Fit{Nodes: []nodefit.Room{nodeRoom("n", 4000, 16)}})
	r := got.Recommendation.ContainerRecommendations[0]
	if !equalLists(r.Target, rl("3", "2Gi")) || !equalLists(r.LowerBound, rl("1", "1Gi")) || !equalLists(r.UpperBound, rl("4", "4Gi")) {
		t.Errorf("capped %v / %v / %v, want the upper bound alone capped to 4 cpu", r.LowerBound, r.Target, r.UpperBound)
	}
	if got.Node != nil {
		t.Errorf("the target fits, but Node = %+v", got.Node)
	}
	if !equalLists(rec.ContainerRecommendations[0].UpperBound, rl("12", "4Gi")) {
		t.Error("the input was modified")
	}
}

func TestFitToNodes(t *testing.T) {
	p := pod(container("app", rl("100m", "100Mi"), nil), container("log", rl("1", "1Gi"), nil))
	rec := recs(
		vpav1.RecommendedContainerResources{ContainerName: "app", LowerBound: rl("2", "1Gi"), Target: rl("6", "2Gi"), UpperBound: rl("9", "4Gi"), UncappedTarget: rl("6", "2Gi")},
		vpav1.RecommendedContainerResources{ContainerName: "gone", Target: rl("50", "1Gi"), LowerBound: rl("50", "1Gi"), UpperBound: rl("50", "1Gi"), UncappedTarget: rl("50", "1Gi")},
	)
	rooms := []nodefit.Room{nodeRoom("n", 4000, 16)}
	out, nc := FitToNodes(p, rec, rooms)
	app := out.ContainerRecommendations[0]
	if !equalLists(app.Target, rl("3", "2Gi")) || !equalLists(app.UpperBound, rl("3", "4Gi")) || !equalLists(app.LowerBound, rl("2", "1Gi")) {
		t.Errorf("app capped to %v / %v / %v", app.LowerBound, app.Target, app.UpperBound)
	}
	if !equalLists(app.UncappedTarget, rl("6", "2Gi")) {
		t.Errorf("uncappedTarget changed to %v", app.UncappedTarget)
	}
	if !equalLists(out.ContainerRecommendations[1].Target, rl("50", "1Gi")) {
		t.Error("a container the pod does not have was capped")
	}
	if nc == nil || nc.Node != "n" || !reflect.DeepEqual(nc.Resources, []corev1.ResourceName{corev1.ResourceCPU}) ||
		nc.Wanted.CPU != 6000 || nc.Allowed.CPU != 3000 {
		t.Errorf("NodeCap %+v", nc)
	}
	if !equalLists(rec.ContainerRecommendations[0].Target, rl("6", "2Gi")) {
		t.Error("the input was modified")
	}
	fits := recs(target("app", rl("1", "1Gi")))
	if out, nc := FitToNodes(p, fits, rooms); out != fits || nc != nil {
		t.Error("a recommendation that fits was copied or capped")
	}
}

func TestQuotaFitPlan(t *testing.T) {
	room := func(reqCPU, reqMem, limCPU, limMem int64) *quota.Room {
		return &quota.Room{Requests: nodefit.Amounts{CPU: reqCPU, Memory: reqMem}, Limits: nodefit.Amounts{CPU: limCPU, Memory: limMem},
			By: map[corev1.ResourceName]string{corev1.ResourceRequestsCPU: "team"}}
	}
	const u = quota.Unlimited
	tests := map[string]struct {
		pod      *corev1.Pod
		rec      *vpav1.RecommendedPodResources
		policy   *vpav1.PodResourcePolicy
		lr       limitrange.Merged
		room     *quota.Room
		surge    int32
		requests corev1.ResourceList
		limits   corev1.ResourceList
		capped   []corev1.ResourceName
		keptOwn  bool
	}{
		"room enough: unchanged": {
			pod: pod(container("app", rl("1", "1Gi"), nil)), rec: recs(target("app", rl("2", "2Gi"))),
			room: room(10000, u, u, u), requests: rl("2", "2Gi"),
		},
		"increase capped, one pod's room kept": {
			pod: pod(container("app", rl("1", "1Gi"), nil)), rec: recs(target("app", rl("5", "2Gi"))),
			room: room(3000, u, u, u), requests: rl("2", "2Gi"), capped: []corev1.ResourceName{corev1.ResourceCPU},
		},
		"surge keeps room for more pods": {
			pod: pod(container("app", rl("1", "1Gi"), nil)), rec: recs(target("app", rl("5", "2Gi"))),
			room: room(4000, u, u, u), surge: 2, requests: rl("2", "2Gi"), capped: []corev1.ResourceName{corev1.ResourceCPU},
		},
		"no room for an increase: own request kept": {
			pod: pod(container("app", rl("1", "1Gi"), nil)), rec: recs(target("app", rl("5", "2Gi"))),
			room: room(500, 512<<20, u, u), requests: rl("1", "1Gi"), capped: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		},
		"a decrease is kept": {
			pod: pod(container("app", rl("4", "1Gi"), nil)), rec: recs(target("app", rl("1", "2Gi"))),
			room: room(0, u, u, u), requests: rl("1", "2Gi"),
		},
		"limits.cpu: the request is capped so that its limit fits": {
			pod: pod(container("app", rl("1", "1Gi"), rl("2", "2Gi"))), rec: recs(target("app", rl("4", "1Gi"))),
			room: room(u, u, 5000, u), requests: rl("1500m", "1Gi"), limits: rl("3", "2Gi"), capped: []corev1.ResourceName{corev1.ResourceCPU},
		},
		"a LimitRange refusing the capped plan: own requests": {
			pod: pod(container("app", rl("1", "1Gi"), nil)), rec: recs(target("app", rl("5", "2Gi"))),
			lr: limitrange.Merge([]*corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
				{Type: corev1.LimitTypeContainer, Min: rl("3", "")}}}}}),
			room: room(3000, u, u, u), capped: []corev1.ResourceName{corev1.ResourceCPU}, keptOwn: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan := PlanForPodFit(tc.pod, vpaWith(tc.policy, tc.rec), tc.lr, Fit{Quota: tc.room, Surge: tc.surge})
			if tc.keptOwn {
				if plan.Changed() || plan.Quota == nil || !plan.Quota.KeptRequests {
					t.Fatalf("plan %+v quota %+v, want the pod left as it is", plan.Containers, plan.Quota)
				}
				return
			}
			got := plan.Containers[0]
			if !equalLists(got.Requests, tc.requests) {
				t.Errorf("requests %v, want %v", got.Requests, tc.requests)
			}
			if tc.limits != nil && !equalLists(got.Limits, tc.limits) {
				t.Errorf("limits %v, want %v", got.Limits, tc.limits)
			}
			if tc.capped == nil {
				if plan.Quota != nil {
					t.Errorf("capped %+v, want no cap", plan.Quota)
				}
				return
			}
			if plan.Quota == nil || !reflect.DeepEqual(plan.Quota.Resources, tc.capped) {
				t.Fatalf("quota cap %+v, want %v capped", plan.Quota, tc.capped)
			}
			if plan.Quota.Quotas != "team" || !strings.Contains(strings.Join(got.Notes, ";"), NoteQuota+" team") {
				t.Errorf("quota cap names %q, notes %v", plan.Quota.Quotas, got.Notes)
			}
		})
	}
}

// TestFitPlansGenerated checks, over generated pods, LimitRanges, policies
// and recommendations with random nodes, quotas and HPAs (generateHPAs):
// the zero Fit gives upstream's plan exactly; every plan fits an eligible
// node (unless none holds even the rest of the pod) and what the quota
// allows the pod; a request left to an HPA never changes; an HPA kept at
// its scale point yields nothing (the plan is the one without it); and
// wherever the plan without a Fit already fits both (and no HPA takes a
// resource), the plan with it is the same.
func TestFitPlansGenerated(t *testing.T) {
	cases := 3000
	if testing.Short() {
		cases = 300
	}
	rng := rand.New(rand.NewPCG(43, 7))
	var nodeCapped, quotaCapped, same int
	hpaKinds := map[string]int{}
	for n := 0; n < cases; n++ {
		g := generate(rng)
		for Admissible(g.pod, nil, g.lr.Items) != nil {
			g = generate(rng)
		}
		upstream := PlanForPod(g.pod, g.vpa, g.lr)
		if zero := PlanForPodFit(g.pod, g.vpa, g.lr, Fit{}); !reflect.DeepEqual(zero, upstream) {
			t.Fatalf("case %d: the zero Fit changed the plan\n%s", n, g)
		}
		var rooms []nodefit.Room
		for i := 0; i < 1+rng.IntN(3); i++ {
			rooms = append(rooms, nodeRoom(string(rune('a'+i)), int64(500+rng.IntN(4000)), int64(1+rng.IntN(4))))
		}
		rooms = nodefit.Frontier(rooms)
		own := quota.TotalsOf(g.pod)
		room := &quota.Room{
			Requests: nodefit.Amounts{CPU: own.Requests.CPU + int64(rng.IntN(4000)), Memory: quota.Unlimited},
			Limits:   nodefit.Amounts{CPU: quota.Unlimited, Memory: own.Limits.Memory + int64(rng.IntN(4096))<<20},
			By:       map[corev1.ResourceName]string{corev1.ResourceRequestsCPU: "q"},
		}
		fit := Fit{Nodes: rooms, Quota: room, Surge: int32(rng.IntN(3))}
		hpas, kind := generateHPAs(rng, g)
		hpaKinds[kind]++
		names := make([]string, len(g.pod.Spec.Containers))
		for i := range g.pod.Spec.Containers {
			names[i] = g.pod.Spec.Containers[i].Name
		}
		fit.Yield = hpa.Yields(g.vpa, hpas, names)
		if kept := hpa.Kept(g.vpa, hpas, names); len(kept) > 0 && len(fit.Yield) > 0 {
			t.Fatalf("case %d: %v kept at their scale point, yet %v yielded\n%s", n, kept, fit.Yield, g)
		}
		plan := PlanForPodFit(g.pod, g.vpa, g.lr, fit)
		if kind == "scale point recorded" {
			// A kept scale point yields nothing: the plan is the one
			// without any HPA.
			noHPA := fit
			noHPA.Yield = nil
			if want := PlanForPodFit(g.pod, g.vpa, g.lr, noHPA); !reflect.DeepEqual(plan, want) {
				t.Fatalf("case %d: with the scale point kept the plan is %v, without the HPA %v\n%s", n, plan.Containers, want.Containers, g)
			}
		}
		applied := Applied(g.pod, plan.Containers)
		for i, c := range plan.Containers {
			name := g.pod.Spec.Containers[i].Name
			for r := range c.Requests {
				if hpa.Yielded(fit.Yield, name, r) {
					t.Fatalf("case %d: container %d gets %s, which is left to an HPA\n%s", n, i, r, g)
				}
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				before, after := g.pod.Spec.Containers[i].Resources.Requests[r], applied.Spec.Containers[i].Resources.Requests[r]
				if hpa.Yielded(fit.Yield, name, r) && before.Cmp(after) != 0 {
					t.Fatalf("case %d: container %d's %s request changed from %s to %s, left to an HPA\n%s", n, i, r, before.String(), after.String(), g)
				}
			}
		}
		if plan.Changed() {
			if err := Admissible(g.pod, plan.Containers, g.lr.Items); err != nil {
				t.Fatalf("case %d: the plan gives a pod the API server refuses: %v\n%s", n, err, g)
			}
		}
		allowed := quotaAllowance(own, room, fit.Surge)
		if got := quota.TotalsOf(applied); !got.Within(allowed) {
			t.Fatalf("case %d: pod charged %+v, the quota allows %+v\n%s", n, got, allowed, g)
		}
		fitsSomeNode := func(p *corev1.Pod) bool {
			need := nodefit.PodAmounts(p)
			for _, r := range rooms {
				if r.Free.Covers(need) {
					return true
				}
			}
			return false
		}
		if !fitsSomeNode(applied) && fitsSomeNode(g.pod) && plan.Changed() {
			t.Fatalf("case %d: the plan fits no node, %+v\n%s", n, rooms, g)
		}
		if plan.Node != nil {
			nodeCapped++
		}
		if plan.Quota != nil {
			quotaCapped++
		}
		up := Applied(g.pod, upstream.Containers)
		if len(fit.Yield) == 0 && upstream.Conflict == nil && fitsSomeNode(up) && quota.TotalsOf(up).Within(allowed) {
			same++
			if !reflect.DeepEqual(plan.Containers, upstream.Containers) {
				t.Fatalf("case %d: upstream's plan fits, but the plan differs: %v, upstream %v\n%s", n, plan.Containers, upstream.Containers, g)
			}
		}
	}
	t.Logf("%d cases: %d capped to a node, %d to the quota, %d as upstream; HPAs %v", cases, nodeCapped, quotaCapped, same, hpaKinds)
	if nodeCapped == 0 || quotaCapped == 0 || same < cases/10 || len(hpaKinds) < 5 {
		t.Error("the generator does not cover every outcome enough")
	}
}

// generateHPAs returns the HPAs of g's workload and what they are: none,
// one on the utilization of cpu, one on the memory of one container, one on
// cpu while the VPA is in scale-point mode before the updater recorded the
// scale point, and the same once it did (g.vpa gets the annotation).
func generateHPAs(rng *rand.Rand, g generated) ([]*autoscalingv2.HorizontalPodAutoscaler, string) {
	g.vpa.Name, g.vpa.Namespace = "v", g.pod.Namespace
	g.vpa.Spec.TargetRef = &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	utilization := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(60))}
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: g.vpa.Namespace, Name: "h"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: g.vpa.Spec.TargetRef.Kind, Name: g.vpa.Spec.TargetRef.Name},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: utilization}}},
		},
	}
	scalePoint := func() {
		g.vpa.Annotations = map[string]string{hpa.ModeAnnotation: hpa.ModeScalePoint}
	}
	switch rng.IntN(5) {
	case 0:
		return nil, "none"
	case 1:
		return []*autoscalingv2.HorizontalPodAutoscaler{h}, "yield cpu"
	case 2:
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ContainerResourceMetricSourceType,
			ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceMemory, Container: g.pod.Spec.Containers[0].Name, Target: utilization}}}
		return []*autoscalingv2.HorizontalPodAutoscaler{h}, "yield memory of a container"
	case 3:
		scalePoint()
		return []*autoscalingv2.HorizontalPodAutoscaler{h}, "scale point not yet recorded"
	default:
		scalePoint()
		h.Annotations = map[string]string{hpa.ScalePointAnnotation: (&hpa.Record{VPA: g.vpa.Name, Metrics: []hpa.RecordedMetric{
			{Resource: corev1.ResourceCPU, Original: 60, Request: resource.MustParse("100m"), Set: 60}}}).Encode()}
		return []*autoscalingv2.HorizontalPodAutoscaler{h}, "scale point recorded"
	}
}

// TestYieldToHPA: a resource left to an HPA is not set, for every container
// (a Resource metric) or for its own (a ContainerResource metric); the
// others are; without yields the plan is upstream's.
func TestYieldToHPA(t *testing.T) {
	p := pod(container("app", rl("100m", "100Mi"), rl("200m", "200Mi")), container("log", rl("100m", "100Mi"), nil))
	v := vpaWith(nil, recs(target("app", rl("1", "1Gi")), target("log", rl("500m", "500Mi"))))
	for name, tc := range map[string]struct {
		yield []hpa.Conflict
		want  []corev1.ResourceList
	}{
		"none":                    {want: []corev1.ResourceList{rl("1", "1Gi"), rl("500m", "500Mi")}},
		"cpu of the pod":          {yield: []hpa.Conflict{{HPA: "h", Resource: corev1.ResourceCPU}}, want: []corev1.ResourceList{rl("", "1Gi"), rl("", "500Mi")}},
		"memory of one container": {yield: []hpa.Conflict{{HPA: "h", Resource: corev1.ResourceMemory, Container: "log"}}, want: []corev1.ResourceList{rl("1", "1Gi"), rl("500m", "")}},
	} {
		t.Run(name, func(t *testing.T) {
			plan := PlanForPodFit(p, v, limitrange.Merged{}, Fit{Yield: tc.yield})
			for i, want := range tc.want {
				if !equalLists(plan.Containers[i].Requests, want) {
					t.Errorf("container %d requests %v, want %v", i, plan.Containers[i].Requests, want)
				}
			}
			if _, ok := plan.Containers[0].Limits[corev1.ResourceCPU]; ok == (len(tc.yield) > 0 && tc.yield[0].Resource == corev1.ResourceCPU) {
				t.Errorf("app's limits %v: a yielded resource's limit is set, or another's is not", plan.Containers[0].Limits)
			}
			capped := CapFit(p, v.Status.Recommendation, nil, limitrange.Merged{}, Fit{Yield: tc.yield})
			if got := capped.Recommendation.ContainerRecommendations[0].UpperBound; !equalLists(got, tc.want[0]) {
				t.Errorf("capped upper bound %v, want %v", got, tc.want[0])
			}
		})
	}
}
