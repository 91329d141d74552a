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

package admission

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

func podItem(min, max corev1.ResourceList) corev1.LimitRangeItem {
	return corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: min, Max: max}
}

func containerItem(min, max, def corev1.ResourceList) corev1.LimitRangeItem {
	return corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: min, Max: max, Default: def}
}

func none() corev1.ResourceList { return nil }

type lrCase struct {
	name       string
	ranges     [][]corev1.LimitRangeItem // one LimitRange per entry
	containers []framework.Container
	podLevel   corev1.ResourceList // pod-level requests and limits
	policy     []vpav1.ContainerResourcePolicy
	targets    map[string]corev1.ResourceList
	// want pins the requests of some containers after admission; every
	// case is also checked against recommendation.PlanForPod.
	want map[string]corev1.ResourceList
	// wantReason is the event on the VPA, when the LimitRanges had to win.
	wantReason string
}

func lrCases() []lrCase {
	c := func(name string, req, lim corev1.ResourceList) framework.Container {
		return framework.Container{Name: name, Requests: req, Limits: lim}
	}
	off := ptr.To(vpav1.ContainerScalingModeOff)
	requestsOnly := ptr.To(vpav1.ContainerControlledValuesRequestsOnly)
	cpuOnly := &[]corev1.ResourceName{corev1.ResourceCPU}
	return []lrCase{
		{
			name:       "issue 23: pod max, one container recommended",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("400m", "1Gi"))}},
			containers: []framework.Container{c("hamster0", rl("100m", "100Mi"), rl("100m", "100Mi")), c("hamster1", rl("400m", "600Mi"), rl("400m", "600Mi"))},
			targets:    map[string]corev1.ResourceList{"hamster0": rl("400m", "600Mi")},
			want:       map[string]corev1.ResourceList{"hamster0": rl("200m", "512Mi"), "hamster1": rl("200m", "512Mi")},
		},
		{
			name:       "pod max, both recommended, limits twice the requests",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("2", ""))}},
			containers: []framework.Container{c("a", rl("250m", ""), rl("500m", "")), c("b", rl("250m", ""), rl("500m", ""))},
			targets:    map[string]corev1.ResourceList{"a": rl("1", ""), "b": rl("1", "")},
			want:       map[string]corev1.ResourceList{"a": rl("500m", ""), "b": rl("500m", "")},
		},
		{
			name:       "pod max that fits",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("4", "4Gi"))}},
			containers: []framework.Container{c("a", rl("100m", "100Mi"), rl("200m", "200Mi")), c("b", rl("100m", "100Mi"), rl("200m", "200Mi"))},
			targets:    map[string]corev1.ResourceList{"a": rl("300m", "300Mi")},
			want:       map[string]corev1.ResourceList{"a": rl("300m", "300Mi"), "b": rl("100m", "100Mi")},
		},
		{
			name:       "pod min scales memory up",
			ranges:     [][]corev1.LimitRangeItem{{podItem(rl("", "256Mi"), none())}},
			containers: []framework.Container{c("a", rl("", "128Mi"), rl("", "128Mi")), c("b", rl("", "128Mi"), rl("", "128Mi"))},
			targets:    map[string]corev1.ResourceList{"a": rl("", "32Mi"), "b": rl("", "96Mi")},
			want:       map[string]corev1.ResourceList{"a": rl("", "64Mi"), "b": rl("", "192Mi")},
		},
		{
			name:       "pod min and max",
			ranges:     [][]corev1.LimitRangeItem{{podItem(rl("200m", ""), rl("1", ""))}},
			containers: []framework.Container{c("a", rl("300m", ""), rl("300m", "")), c("b", rl("300m", ""), rl("300m", ""))},
			targets:    map[string]corev1.ResourceList{"a": rl("50m", ""), "b": rl("50m", "")},
			want:       map[string]corev1.ResourceList{"a": rl("100m", ""), "b": rl("100m", "")},
		},
		{
			name:       "container max keeps the limit ratio",
			ranges:     [][]corev1.LimitRangeItem{{containerItem(none(), rl("1", ""), none())}},
			containers: []framework.Container{c("a", rl("100m", ""), rl("200m", ""))},
			targets:    map[string]corev1.ResourceList{"a": rl("2", "")},
			want:       map[string]corev1.ResourceList{"a": rl("500m", "")},
		},
		{
			name:       "container min",
			ranges:     [][]corev1.LimitRangeItem{{containerItem(rl("", "64Mi"), none(), none())}},
			containers: []framework.Container{c("a", rl("", "100Mi"), nil)},
			targets:    map[string]corev1.ResourceList{"a": rl("", "10Mi")},
			want:       map[string]corev1.ResourceList{"a": rl("", "64Mi")},
		},
		{
			name:       "container and pod LimitRanges together",
			ranges:     [][]corev1.LimitRangeItem{{containerItem(rl("50m", ""), rl("800m", ""), none()), podItem(none(), rl("1", ""))}},
			containers: []framework.Container{c("a", rl("200m", ""), rl("400m", "")), c("b", rl("100m", ""), rl("100m", ""))},
			targets:    map[string]corev1.ResourceList{"a": rl("800m", ""), "b": rl("20m", "")},
		},
		{
			name:       "several LimitRanges in one namespace",
			ranges:     [][]corev1.LimitRangeItem{{containerItem(none(), rl("2", "2Gi"), none())}, {containerItem(none(), rl("500m", ""), none())}, {podItem(none(), rl("", "1Gi"))}},
			containers: []framework.Container{c("a", rl("100m", "256Mi"), rl("200m", "256Mi"))},
			targets:    map[string]corev1.ResourceList{"a": rl("1", "2Gi")},
			want:       map[string]corev1.ResourceList{"a": rl("250m", "1Gi")},
		},
		{
			name:       "RequestsOnly under a pod max keeps limits",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("1", ""))}},
			containers: []framework.Container{c("a", rl("100m", ""), rl("500m", "")), c("b", rl("100m", ""), rl("500m", ""))},
			policy:     []vpav1.ContainerResourcePolicy{{ContainerName: "*", ControlledValues: requestsOnly}},
			targets:    map[string]corev1.ResourceList{"a": rl("300m", ""), "b": rl("300m", "")},
		},
		{
			name:       "RequestsOnly with a container max",
			ranges:     [][]corev1.LimitRangeItem{{containerItem(none(), rl("", "512Mi"), none())}},
			containers: []framework.Container{c("a", rl("", "128Mi"), rl("", "256Mi"))},
			policy:     []vpav1.ContainerResourcePolicy{{ContainerName: "a", ControlledValues: requestsOnly}},
			targets:    map[string]corev1.ResourceList{"a": rl("", "1Gi")},
			want:       map[string]corev1.ResourceList{"a": rl("", "256Mi")},
		},
		{
			name:       "maxAllowed on top of a pod max",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("2", ""))}},
			containers: []framework.Container{c("a", rl("500m", ""), rl("500m", "")), c("b", rl("500m", ""), rl("500m", ""))},
			policy:     []vpav1.ContainerResourcePolicy{{ContainerName: "a", MaxAllowed: rl("300m", "")}},
			targets:    map[string]corev1.ResourceList{"a": rl("3", ""), "b": rl("1", "")},
		},
		{
			name:       "minAllowed above the container max: the LimitRange wins",
			ranges:     [][]corev1.LimitRangeItem{{containerItem(none(), rl("1", ""), none())}},
			containers: []framework.Container{c("a", rl("100m", ""), rl("100m", ""))},
			policy:     []vpav1.ContainerResourcePolicy{{ContainerName: "a", MinAllowed: rl("2", "")}},
			targets:    map[string]corev1.ResourceList{"a": rl("300m", "")},
			want:       map[string]corev1.ResourceList{"a": rl("1", "")},
			wantReason: "LimitRangeOverridesPolicy",
		},
		{
			name:       "minAllowed breaking a pod max: the LimitRange wins",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("1", ""))}},
			containers: []framework.Container{c("a", rl("400m", ""), rl("400m", "")), c("b", rl("500m", ""), rl("500m", ""))},
			policy:     []vpav1.ContainerResourcePolicy{{ContainerName: "a", MinAllowed: rl("800m", "")}, {ContainerName: "b", Mode: off}},
			targets:    map[string]corev1.ResourceList{"a": rl("300m", "")},
			want:       map[string]corev1.ResourceList{"a": rl("500m", ""), "b": rl("500m", "")},
			wantReason: "LimitRangeOverridesPolicy",
		},
		{
			name:       "limit to request ratio kept",
			ranges:     [][]corev1.LimitRangeItem{{{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("2", "")}}},
			containers: []framework.Container{c("a", rl("100m", ""), rl("150m", ""))},
			targets:    map[string]corev1.ResourceList{"a": rl("400m", "")},
			want:       map[string]corev1.ResourceList{"a": rl("400m", "")},
		},
		{
			name:       "a container in mode Off keeps its share of the pod max",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("1", ""))}},
			containers: []framework.Container{c("a", rl("200m", ""), rl("200m", "")), c("b", rl("600m", ""), rl("600m", ""))},
			policy:     []vpav1.ContainerResourcePolicy{{ContainerName: "b", Mode: off}},
			targets:    map[string]corev1.ResourceList{"a": rl("800m", "")},
			want:       map[string]corev1.ResourceList{"a": rl("400m", ""), "b": rl("600m", "")},
		},
		{
			name:       "containers without resources get the LimitRange defaults, then are scaled",
			ranges:     [][]corev1.LimitRangeItem{{containerItem(none(), none(), rl("100m", "")), podItem(none(), rl("500m", ""))}},
			containers: []framework.Container{c("a", nil, nil), c("b", nil, nil)},
			targets:    map[string]corev1.ResourceList{"a": rl("600m", "")},
		},
		{
			name:       "controlledResources cpu only under a pod memory max",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("2", "1Gi"))}},
			containers: []framework.Container{c("a", rl("100m", "512Mi"), rl("100m", "512Mi")), c("b", rl("100m", "256Mi"), rl("100m", "256Mi"))},
			policy:     []vpav1.ContainerResourcePolicy{{ContainerName: "a", ControlledResources: cpuOnly}},
			targets:    map[string]corev1.ResourceList{"a": rl("500m", "2Gi"), "b": rl("200m", "1Gi")},
		},
		{
			name:       "pod min cpu scales two containers up",
			ranges:     [][]corev1.LimitRangeItem{{podItem(rl("1", ""), none())}},
			containers: []framework.Container{c("a", rl("500m", ""), nil), c("b", rl("500m", ""), nil)},
			targets:    map[string]corev1.ResourceList{"a": rl("100m", ""), "b": rl("300m", "")},
			want:       map[string]corev1.ResourceList{"a": rl("250m", ""), "b": rl("750m", "")},
		},
		{
			name:       "limits only: the API server sets the requests",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("1", "1Gi"))}},
			containers: []framework.Container{c("a", nil, rl("300m", "300Mi")), c("b", nil, rl("300m", "300Mi"))},
			targets:    map[string]corev1.ResourceList{"a": rl("900m", "900Mi"), "b": rl("100m", "100Mi")},
		},
		{
			name:       "pod-level resources the recommendation would exceed: left alone",
			ranges:     [][]corev1.LimitRangeItem{{podItem(none(), rl("4", ""))}},
			containers: []framework.Container{c("a", rl("200m", ""), nil), c("b", rl("200m", ""), nil)},
			podLevel:   rl("500m", ""),
			targets:    map[string]corev1.ResourceList{"a": rl("1", "")},
			want:       map[string]corev1.ResourceList{"a": rl("200m", ""), "b": rl("200m", "")},
			wantReason: "LimitRangeConflict",
		},
		{
			name:       "container default limit stands in for a missing one",
			ranges:     [][]corev1.LimitRangeItem{{containerItem(none(), rl("", "1Gi"), rl("", "512Mi"))}},
			containers: []framework.Container{c("a", rl("", "128Mi"), nil)},
			targets:    map[string]corev1.ResourceList{"a": rl("", "512Mi")},
			want:       map[string]corev1.ResourceList{"a": rl("", "256Mi")},
		},
	}
}

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// TestLimitRangeCapping runs LimitRange × policy × pod shapes against the
// real API server: every Deployment's pod is created (none refused by the
// API server's LimitRange admission), with the resources PlanForPod gives,
// upstream's numbers where pinned, and an event on the VPA where the
// LimitRanges had to win.
func TestLimitRangeCapping(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	warned := &warnings{}
	cfg := rest.CopyConfig(e.c.Config)
	cfg.WarningHandler = warned
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range lrCases() {
		ok := t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("lr%d", i)
			ranges := e.replaceLimitRanges(t, name, tc.ranges)
			w := framework.Workload{Name: name, Containers: tc.containers}
			d := w.Deployment(e.ns)
			d.Spec.Replicas = ptr.To(int32(0))
			if tc.podLevel != nil {
				d.Spec.Template.Spec.Resources = &corev1.ResourceRequirements{Requests: tc.podLevel, Limits: tc.podLevel}
			}
			if _, err := e.c.Client.AppsV1().Deployments(e.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			vpa := e.createMultiVPA(t, name, tc.policy, tc.targets)

			// What the webhook should do, from the pod as it reaches it.
			tmpl := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns}, Spec: *d.Spec.Template.Spec.DeepCopy()}
			limitrange.DefaultPod(tmpl, ranges)
			plan := recommendation.PlanForPod(tmpl, vpa, limitrange.Merge(ranges))
			want := recommendation.Applied(tmpl, plan.Containers)
			if (tc.wantReason != "") != (plan.Conflict != nil) {
				t.Fatalf("plan conflict %v, want reason %q", plan.Conflict, tc.wantReason)
			}
			for cname, req := range tc.want {
				for _, c := range want.Spec.Containers {
					if c.Name == cname {
						assertResources(t, "planned requests of "+cname, c.Resources.Requests, req)
					}
				}
			}

			// Wait until the admission controller's caches have this case's
			// LimitRanges and VPA: a dry-run pod gets exactly the plan (and
			// the warning, when there is a conflict). A patch the API server
			// refused would fail this dry run too.
			var lastErr error
			framework.WaitFor(t, time.Minute, func() (bool, error) {
				warned.take()
				p, err := framework.DryRunPodWith(ctx, client, e.ns, name)
				lastErr = err
				if err != nil {
					return false, nil
				}
				if !sameResources(p, want) {
					lastErr = fmt.Errorf("dry-run pod %v, want %v", describe(p), describe(want))
					return false, nil
				}
				ws := warned.take()
				return tc.wantReason == "" || len(ws) > 0 && strings.Contains(strings.Join(ws, "\n"), "VPA "+name), nil
			})
			if t.Failed() {
				t.Fatalf("last: %v", lastErr)
			}

			// The real pod: created by the ReplicaSet controller, never refused.
			if _, err := e.c.Client.AppsV1().Deployments(e.ns).Patch(ctx, name, "application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			pods := e.c.WaitForPods(t, e.ns, "app="+name, 1, func(*corev1.Pod) bool { return true })
			if !sameResources(&pods[0], want) {
				t.Errorf("pod %s: %v, want %v", pods[0].Name, describe(&pods[0]), describe(want))
			}
			if tc.wantReason != "" {
				framework.WaitFor(t, 30*time.Second, func() (bool, error) {
					evs, err := e.c.Client.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=VerticalPodAutoscaler,involvedObject.name=" + name + ",reason=" + tc.wantReason})
					return err == nil && len(evs.Items) > 0, err
				})
			}
		})
		if !ok {
			break
		}
	}
}

func (e *env) replaceLimitRanges(t *testing.T, prefix string, specs [][]corev1.LimitRangeItem) []*corev1.LimitRange {
	t.Helper()
	ctx := context.Background()
	lrs := e.c.Client.CoreV1().LimitRanges(e.ns)
	if err := lrs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	var out []*corev1.LimitRange
	for j, items := range specs {
		created, err := lrs.Create(ctx, &corev1.LimitRange{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, j)},
			Spec:       corev1.LimitRangeSpec{Limits: items},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, created)
	}
	return out
}

// createMultiVPA creates a VPA in mode Initial for Deployment name with a
// recommendation per container.
func (e *env) createMultiVPA(t *testing.T, name string, policy []vpav1.ContainerResourcePolicy, targets map[string]corev1.ResourceList) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	ctx := context.Background()
	mode := vpav1.UpdateModeInitial
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}
	if policy != nil {
		v.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{ContainerPolicies: policy}
	}
	created, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(ctx, v, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &vpav1.RecommendedPodResources{}
	for c, target := range targets {
		rec.ContainerRecommendations = append(rec.ContainerRecommendations, vpav1.RecommendedContainerResources{
			ContainerName: c, Target: target, LowerBound: target, UpperBound: target, UncappedTarget: target,
		})
	}
	created.Status.Recommendation = rec
	updated, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(e.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

func sameResources(got, want *corev1.Pod) bool {
	if len(got.Spec.Containers) != len(want.Spec.Containers) {
		return false
	}
	for i := range got.Spec.Containers {
		g, w := got.Spec.Containers[i].Resources, want.Spec.Containers[i].Resources
		if !sameList(g.Requests, w.Requests) || !sameList(g.Limits, w.Limits) {
			return false
		}
	}
	return true
}

func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func describe(p *corev1.Pod) string {
	var parts []string
	for _, c := range p.Spec.Containers {
		parts = append(parts, fmt.Sprintf("%s{requests %v limits %v}", c.Name, c.Resources.Requests, c.Resources.Limits))
	}
	return strings.Join(parts, " ")
}
