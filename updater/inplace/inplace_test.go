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

package inplace

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

func rl(cpu string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
}

func TestInfeasibleRulesOut(t *testing.T) {
	attempt := Record{Infeasible: true, Requests: map[string]corev1.ResourceList{"app": rl("2")}}
	tests := map[string]struct {
		rec  Record
		next map[string]corev1.ResourceList
		want bool
	}{
		"no infeasible attempt":          {rec: Record{Requests: attempt.Requests}, next: map[string]corev1.ResourceList{"app": rl("3")}, want: false},
		"same recommendation":            {rec: attempt, next: map[string]corev1.ResourceList{"app": rl("2")}, want: true},
		"higher recommendation":          {rec: attempt, next: map[string]corev1.ResourceList{"app": rl("3")}, want: true},
		"lower recommendation retries":   {rec: attempt, next: map[string]corev1.ResourceList{"app": rl("1")}, want: false},
		"other container does not count": {rec: attempt, next: map[string]corev1.ResourceList{"side": rl("1")}, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := InfeasibleRulesOut(tc.rec, tc.next); got != tc.want {
				t.Errorf("InfeasibleRulesOut = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResizeRecordsOnPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Generation: 1},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl("100m")}},
			{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: rl("100m")}},
		}},
	}
	client := fake.NewClientset(pod)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Client{Pods: func(ns string) PodPatcher { return client.CoreV1().Pods(ns) }}
	got, err := c.Resize(context.Background(), pod, []recommendation.ContainerResources{{Requests: rl("200m")}, {Requests: rl("300m")}},
		map[string]bool{"app": true}, now)
	if err != nil {
		t.Fatal(err)
	}
	appCPU := got["app"][corev1.ResourceCPU]
	if len(got) != 1 || appCPU.String() != "200m" {
		t.Fatalf("requested %v, want only app: 200m (sidecar is not observed)", got)
	}
	var subresources []string
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			subresources = append(subresources, p.GetSubresource())
		}
	}
	// The original resources go on the pod before the resize, so that no
	// state of the pod is resized without them; the record after it.
	if len(subresources) != 3 || subresources[0] != "" || subresources[1] != "resize" || subresources[2] != "" {
		t.Fatalf("patches to subresources %q, want the pod, resize, then the pod", subresources)
	}
	stored, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orig, ok, err := annotations.OriginalOf(stored)
	if err != nil || !ok || len(orig) != 1 || cpuOf(orig["app"]) != "100m" {
		t.Fatalf("original resources %v (ok %v, err %v), want app's 100m (the only resized container)", orig, ok, err)
	}

	// A second resize keeps the recorded originals and patches no more.
	before := len(client.Actions())
	if _, err := c.Resize(context.Background(), stored, []recommendation.ContainerResources{{Requests: rl("250m")}}, map[string]bool{"app": true}, now); err != nil {
		t.Fatal(err)
	}
	if n := len(client.Actions()) - before; n != 2 {
		t.Errorf("second resize made %d calls, want 2 (resize and record)", n)
	}
	again, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o, _, _ := annotations.OriginalOf(again); cpuOf(o["app"]) != "100m" {
		t.Errorf("originals after a second resize %v, want app's 100m still", o)
	}
	rec, ok := Read(stored)
	if !ok || !rec.Started.Time.Equal(now) || rec.Infeasible {
		t.Fatalf("record %+v (ok %v), want started at %v", rec, ok, now)
	}
	if stored.Annotations["vpaInPlaceUpdated"] != "true" {
		t.Errorf("vpaInPlaceUpdated = %q", stored.Annotations["vpaInPlaceUpdated"])
	}
	started, ok := ResizeStarted(stored)
	if !ok || !started.Equal(now) {
		t.Errorf("ResizeStarted = %v, %v", started, ok)
	}

	// A restarted updater reads the same record: marking infeasible keeps the start time.
	marked, err := c.MarkInfeasible(context.Background(), stored, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !marked.Infeasible || !marked.Started.Time.Equal(now) {
		t.Errorf("marked %+v, want infeasible with the original start", marked)
	}
	raw, _ := json.Marshal(marked)
	if len(raw) == 0 {
		t.Fatal("empty record")
	}
}

// TestMarkRefusedRulesOutTheSameRequests: a resize the API server refused
// for node capacity is recorded with the refused requests, so that the same
// or higher requests are not sent again while a lower one is.
func TestMarkRefusedRulesOutTheSameRequests(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Generation: 3},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl("100m")}}}},
	}
	client := fake.NewClientset(pod)
	c := Client{Pods: func(ns string) PodPatcher { return client.CoreV1().Pods(ns) }}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	refused := map[string]corev1.ResourceList{"app": rl("8")}
	if _, err := c.MarkRefused(context.Background(), pod, refused, now); err != nil {
		t.Fatal(err)
	}
	stored, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := Read(stored)
	if !ok || !rec.Current(stored) || !rec.Infeasible {
		t.Fatalf("record %+v (ok %v), want a current infeasible record", rec, ok)
	}
	if !InfeasibleRulesOut(rec, map[string]corev1.ResourceList{"app": rl("8")}) {
		t.Error("the refused requests are not ruled out")
	}
	if InfeasibleRulesOut(rec, map[string]corev1.ResourceList{"app": rl("4")}) {
		t.Error("lower requests are ruled out")
	}
}

func cpuOf(r annotations.Resources) string {
	q := r.Requests[corev1.ResourceCPU]
	return q.String()
}

func TestUnboostResizesAndDropsTheAnnotations(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{
			"vpaCpuStartupBoost/app": `{"requests":{"cpu":"100m"},"limits":{}}`, "vpaCpuStartupBoost/side": "{}", "keep": "me"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl("400m")}},
			{Name: "side", Resources: corev1.ResourceRequirements{Requests: rl("1")}},
		}},
	}
	client := fake.NewClientset(pod)
	c := Client{Pods: func(ns string) PodPatcher { return client.CoreV1().Pods(ns) }}
	err := c.Unboost(context.Background(), pod, []recommendation.ContainerResources{{Requests: rl("100m")}, {}},
		[]string{"vpaCpuStartupBoost/app", "vpaCpuStartupBoost/side"})
	if err != nil {
		t.Fatal(err)
	}
	var resized bool
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetSubresource() == "resize" {
			resized = true
			if want := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"100m"}}}]}}`; string(p.GetPatch()) != want {
				t.Errorf("resize patch %s, want %s", p.GetPatch(), want)
			}
		}
	}
	if !resized {
		t.Fatal("no resize was sent")
	}
	got, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"vpaCpuStartupBoost/app", "vpaCpuStartupBoost/side"} {
		if _, ok := got.Annotations[k]; ok {
			t.Errorf("annotation %s kept", k)
		}
	}
	if got.Annotations["keep"] != "me" || got.Annotations[annotations.InPlaceUpdated] != "true" {
		t.Errorf("annotations %v", got.Annotations)
	}
}

func TestResizeSendsNativeSidecarsUnderInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("10m")}}},
			Containers:     []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl("100m")}}},
		},
	}
	client := fake.NewClientset(pod)
	c := Client{Pods: func(ns string) PodPatcher { return client.CoreV1().Pods(ns) }}
	got, err := c.Resize(context.Background(), pod, []recommendation.ContainerResources{{Requests: rl("200m")}, {Requests: rl("50m")}}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("requested %v", got)
	}
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetSubresource() == "resize" {
			want := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m"}}}],"initContainers":[{"name":"proxy","resources":{"requests":{"cpu":"50m"}}}]}}`
			if string(p.GetPatch()) != want {
				t.Errorf("resize patch %s, want %s", p.GetPatch(), want)
			}
			return
		}
	}
	t.Fatal("no resize was sent")
}
