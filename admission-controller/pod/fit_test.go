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

package pod

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

// fakeNodeRooms answers NodeRooms from nodes, recording the constraints
// asked.
type fakeNodeRooms struct {
	nodes []*corev1.Node
	asked []nodefit.Constraints
}

func (f *fakeNodeRooms) Rooms(c nodefit.Constraints, _ string) ([]nodefit.Room, bool) {
	f.asked = append(f.asked, c)
	rooms := []nodefit.Room{}
	for _, n := range f.nodes {
		if c.Allows(n) {
			a := nodefit.AmountsOf(n.Status.Allocatable)
			rooms = append(rooms, nodefit.Room{Node: n.Name, Allocatable: a, Free: a})
		}
	}
	return nodefit.Frontier(rooms), true
}

func sizedNode(name, cpu string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Gi")}}}
}

type fixedQuota struct{ room *quota.Room }

func (f fixedQuota) Room(string) *quota.Room { return f.room }

// patched applies the handler's patch to the pod and returns the first
// container's requests.
func patched(t *testing.T, pod *corev1.Pod, patch []byte) corev1.ResourceList {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return got.Spec.Containers[0].Resources.Requests
}

// TestAdmitNodeFit: a recommendation larger than every node the pod may
// use is capped to the largest of them; the nodeSelector decides which
// count; the response warns; the vpaUpdates annotation says why.
func TestAdmitNodeFit(t *testing.T) {
	nodes := &fakeNodeRooms{nodes: []*corev1.Node{
		sizedNode("small", "2", map[string]string{"pool": "a"}),
		sizedNode("large", "16", map[string]string{"pool": "b"}),
	}}
	vpa := testVPA(rec("app", rl("8", "1Gi")))
	for name, tc := range map[string]struct {
		selector map[string]string
		want     string
		node     string
	}{
		"the large node is eligible: fits": {want: "8"},
		"only the small node is eligible":  {selector: map[string]string{"pool": "a"}, want: "2", node: "small"},
	} {
		t.Run(name, func(t *testing.T) {
			h := NewHandler(fakeFinder{vpa: vpa}, fakeLimits{}).WithNodeFit(nodes)
			pod := testPod(nil, ctr("app", rl("100m", "100Mi"), nil))
			pod.Spec.NodeSelector = tc.selector
			res, err := h.Admit(context.Background(), decodedFrom(pod), "ns", nil)
			if err != nil {
				t.Fatal(err)
			}
			if asked := nodes.asked[len(nodes.asked)-1]; !maps.Equal(asked.NodeSelector, tc.selector) {
				t.Errorf("the handler asked for %+v, not the pod's nodeSelector %v", asked, tc.selector)
			}
			got := patched(t, pod, res.Patch)[corev1.ResourceCPU]
			if got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("cpu request %s, want %s", got.String(), tc.want)
			}
			if tc.node == "" {
				if len(res.Warnings) != 0 {
					t.Errorf("warnings %q, want none", res.Warnings)
				}
				return
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "node "+tc.node) {
				t.Errorf("warnings %q, want one naming node %s", res.Warnings, tc.node)
			}
			if !strings.Contains(string(res.Patch), recommendation.NoteNodeFit+" "+tc.node) {
				t.Errorf("patch %s does not note the node cap", res.Patch)
			}
		})
	}
}

// TestAdmitQuotaFit: the increase is capped to what the quota leaves less
// room for the rollout's surge, with a warning and an event on the VPA; a
// pod whose patch fits is left as planned.
func TestAdmitQuotaFit(t *testing.T) {
	room := &quota.Room{
		Requests: nodefit.Amounts{CPU: 4000, Memory: quota.Unlimited},
		Limits:   nodefit.Amounts{CPU: quota.Unlimited, Memory: quota.Unlimited},
		By:       map[corev1.ResourceName]string{corev1.ResourceRequestsCPU: "team-quota"},
	}
	for name, tc := range map[string]struct {
		target string
		surge  int32
		want   string
		capped bool
	}{
		"fits":                        {target: "2", want: "2"},
		"capped, room for one more":   {target: "8", want: "3", capped: true},
		"capped, room for two more":   {target: "8", surge: 2, want: "2", capped: true},
		"no room: the pod's own kept": {target: "8", surge: 4, want: "1", capped: true},
	} {
		t.Run(name, func(t *testing.T) {
			rec := &fakeRecorder{}
			vpa := testVPA(func(v *vpav1.VerticalPodAutoscaler) {
				v.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
					{ContainerName: "app", Target: rl(tc.target, "")}}}
			})
			h := NewHandler(fakeFinder{vpa: vpa}, fakeLimits{}).WithRecorder(rec).
				WithQuotaFit(fixedQuota{room}, func(*vpav1.VerticalPodAutoscaler) int32 { return tc.surge })
			pod := testPod(nil, ctr("app", rl("1", ""), nil))
			res, err := h.Admit(context.Background(), decodedFrom(pod), "ns", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := patched(t, pod, res.Patch)[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("cpu request %s, want %s", got.String(), tc.want)
			}
			if !tc.capped {
				if len(rec.events) != 0 || len(res.Warnings) != 0 {
					t.Errorf("events %+v warnings %q, want none", rec.events, res.Warnings)
				}
				return
			}
			if len(rec.events) != 1 || rec.events[0].reason != recommendation.ReasonResourceQuotaConflict || !strings.Contains(rec.events[0].message, "team-quota") {
				t.Errorf("events %+v, want one %s naming the quota", rec.events, recommendation.ReasonResourceQuotaConflict)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "ResourceQuota team-quota") {
				t.Errorf("warnings %q", res.Warnings)
			}
		})
	}
}

// TestAdmitYieldsToHPA: with an HPA on the utilization of cpu, a new pod
// keeps its own cpu request and gets the recommended memory.
func TestAdmitYieldsToHPA(t *testing.T) {
	vpa := testVPA(rec("app", rl("2", "1Gi")), func(v *vpav1.VerticalPodAutoscaler) {
		v.Spec.TargetRef = &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	})
	cpuHPA := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}}},
		},
	}
	h := NewHandler(fakeFinder{vpa: vpa}, fakeLimits{}).WithHPAYield(func(string) []*autoscalingv2.HorizontalPodAutoscaler {
		return []*autoscalingv2.HorizontalPodAutoscaler{cpuHPA}
	})
	pod := testPod(nil, ctr("app", rl("100m", "100Mi"), nil))
	res, err := h.Admit(context.Background(), decodedFrom(pod), "ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := patched(t, pod, res.Patch); !got.Cpu().Equal(resource.MustParse("100m")) || !got.Memory().Equal(resource.MustParse("1Gi")) {
		t.Errorf("requests %v, want the pod's own cpu and the recommended memory", got)
	}
}
