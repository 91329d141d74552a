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

// Package hpa checks a VPA and an HPA on the same resource against the local
// control plane, whose kube-controller-manager runs the HPA controller on
// metrics-server's readings of KWOK usage: by default the VPA leaves cpu to
// the HPA and keeps setting memory; in scale-point mode the updater retunes
// the HPA's target so that the controller computes the same replicas.
package hpa

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/hpa"
)

func rl(cpu, mem string) corev1.ResourceList { return framework.Resources(cpu, mem) }

type env struct {
	c   *framework.Cluster
	ns  string
	vpa vpaclient.Interface
}

func setup(t *testing.T) *env {
	t.Helper()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "admission-controller")
	c.ApplyRBAC(t, "updater")
	return &env{c: c, ns: c.NewNamespace(t), vpa: vpaclient.NewForConfigOrDie(c.Config)}
}

// runUpdater starts the updater for the namespace, reading the admission
// controller's status Lease from it.
func (e *env) runUpdater(t *testing.T, extra ...string) *framework.Process {
	t.Helper()
	return e.c.RunComponent(t, framework.Component{
		Binary: e.c.BuildBinary(t, "./updater"),
		Args: append([]string{"--vpa-object-namespace=" + e.ns, "--updater-interval=2s", "--address=127.0.0.1:0",
			"--admission-controller-status-lease-namespace=" + e.ns, "--v=4"}, extra...),
		ServiceAccount: "kube-system/vpa-updater",
	})
}

// createHPA creates an HPA of Deployment web on the cpu utilization target.
func (e *env) createHPA(t *testing.T, target int32, minReplicas, maxReplicas int32) {
	t.Helper()
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: e.ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(minReplicas), MaxReplicas: maxReplicas,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)}}}},
		},
	}
	if _, err := e.c.Client.AutoscalingV2().HorizontalPodAutoscalers(e.ns).Create(context.Background(), h, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createVPA creates a Recreate VPA of Deployment web with the annotations
// and gives it the recommendation target (as the recommender would).
func (e *env) createVPA(t *testing.T, annotations map[string]string, target corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	mode := vpav1.UpdateModeRecreate
	v, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(ctx, &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: e.ns, Annotations: annotations},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
		{ContainerName: "app", Target: target, LowerBound: target, UpperBound: target, UncappedTarget: target},
	}}
	if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).UpdateStatus(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) podUIDs(t *testing.T) map[types.UID]bool {
	t.Helper()
	pods, err := e.c.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[types.UID]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.UID] = true
		}
	}
	return out
}

func (e *env) noEvent(t *testing.T, reasons ...string) {
	t.Helper()
	evs, err := e.c.Client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		for _, r := range reasons {
			if ev.Reason == r {
				t.Errorf("event %s on %s %s: %s", ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message)
			}
		}
	}
}

// TestCPULeftToHPA: an HPA scales Deployment web on its cpu utilization and
// a Recreate VPA recommends more cpu and memory. New pods get the
// recommended memory and keep their own cpu, and the updater evicts none of
// them for the cpu it does not set.
func TestCPULeftToHPA(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	web := framework.Workload{Name: "web", Containers: []framework.Container{{Name: "app", Requests: rl("100m", "64Mi")}}}.Deployment(e.ns)
	web.Spec.Replicas = ptr.To[int32](0)
	if _, err := e.c.Client.AppsV1().Deployments(e.ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createHPA(t, 80, 2, 2)
	e.createVPA(t, nil, rl("300m", "128Mi"))
	e.c.StartScopedAdmission(t, e.ns)
	// The admission controller's HPA cache is not waited for: wait until a
	// new pod keeps its cpu.
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		p, err := e.c.DryRunPod(e.ns, "web")
		if err != nil {
			return false, nil
		}
		r := p.Spec.Containers[0].Resources.Requests
		return r.Cpu().Cmp(resource.MustParse("100m")) == 0 && r.Memory().Cmp(resource.MustParse("128Mi")) == 0, nil
	})
	// The updater's HPA cache is not waited for: let it run a few loops
	// before there are pods to update.
	upd := e.runUpdater(t)
	loops := func() int { return strings.Count(upd.Log(), "Updater loop done") }
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		if exited, err := upd.Exited(); exited {
			return false, fmt.Errorf("updater exited: %v", err)
		}
		return loops() >= 3, nil
	})
	// An HPA leaves a Deployment at 0 replicas alone: scale it to the
	// HPA's 2.
	if _, err := e.c.Client.AppsV1().Deployments(e.ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.c.WaitForPods(t, e.ns, "app=web", 2, framework.PodRunning)
	for _, p := range pods {
		r := p.Spec.Containers[0].Resources.Requests
		if r.Cpu().Cmp(resource.MustParse("100m")) != 0 || r.Memory().Cmp(resource.MustParse("128Mi")) != 0 {
			t.Errorf("pod %s requests %v, want its own cpu 100m and the recommended memory 128Mi", p.Name, r)
		}
	}
	before := e.podUIDs(t)
	// Five loops that each saw the pods (without the yield, the first
	// would evict one of them for its cpu).
	seen := loops()
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		if exited, err := upd.Exited(); exited {
			return false, fmt.Errorf("updater exited: %v", err)
		}
		return loops() >= seen+5, nil
	})
	if after := e.podUIDs(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("pods changed from %v to %v", before, after)
	}
	e.noEvent(t, "EvictedByVPA", "EvictedPod")
}

// TestScalePointKept: the pods of Deployment web run at half their cpu
// request, and an HPA on 50% cpu utilization keeps 2 replicas. A VPA in
// scale-point mode recommends twice the cpu; the updater (with
// --hpa-scale-point and its RBAC) records the HPA's scale point, the pods
// are recreated with 400m, and the HPA's target is retuned to 25%. Once the
// HPA controller reports 25% for that spec, it still wants 2 replicas.
func TestScalePointKept(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	rbac := filepath.Join(e.c.RepoRoot, "deploy", "components", "hpa-scale-point", "rbac.yaml")
	e.c.Kubectl(t, "apply", "-f", rbac)
	t.Cleanup(func() { _, _ = e.c.KubectlE("delete", "--ignore-not-found", "-f", rbac) })

	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Replicas: 2,
		Containers: []framework.Container{{Name: "app", Requests: rl("200m", "64Mi")}}, Usage: framework.Usage{CPU: "100m"}})
	e.c.WaitForPods(t, e.ns, "app=web", 2, framework.PodRunning)
	e.createHPA(t, 50, 1, 6)
	hpas := e.c.Client.AutoscalingV2().HorizontalPodAutoscalers(e.ns)
	// The HPA controller sees 50% and wants the 2 replicas there are.
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		h, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return near(currentUtilization(h), 50) && h.Status.DesiredReplicas == 2, nil
	})

	e.createVPA(t, map[string]string{hpa.ModeAnnotation: hpa.ModeScalePoint}, rl("400m", "64Mi"))
	e.c.StartScopedAdmission(t, e.ns)
	upd := e.runUpdater(t, "--hpa-scale-point")

	// Recorded, then every pod recreated with 400m and the target at 25%.
	framework.WaitFor(t, 4*time.Minute, func() (bool, error) {
		if exited, err := upd.Exited(); exited {
			return false, fmt.Errorf("updater exited: %v", err)
		}
		h, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		r, err := hpa.RecordOf(h)
		if err != nil || r == nil {
			return false, err
		}
		if m := r.Find(corev1.ResourceCPU, ""); m == nil || m.Original != 50 || m.Request.Cmp(resource.MustParse("200m")) != 0 {
			return false, fmt.Errorf("record %+v, want cpu at 50%% of 200m", r)
		}
		pods, err := e.c.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if !framework.PodRunning(&p) || p.DeletionTimestamp != nil {
				continue
			}
			running++
			if p.Spec.Containers[0].Resources.Requests.Cpu().Cmp(resource.MustParse("400m")) != 0 {
				return false, nil
			}
		}
		target, _ := hpa.UtilizationTarget(h, corev1.ResourceCPU, "")
		return running >= 2 && target == 25, nil
	})
	// The controller now measures 100m of 400m, 25%, against the target of
	// 25%: the same 2 replicas (at 50% it would want 4).
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		h, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if h.Status.ObservedGeneration == nil || *h.Status.ObservedGeneration != h.Generation || !near(currentUtilization(h), 25) {
			return false, nil
		}
		if h.Status.DesiredReplicas != 2 {
			return false, fmt.Errorf("at 25%% of the new requests the HPA wants %d replicas, want 2", h.Status.DesiredReplicas)
		}
		return true, nil
	})
	evs, err := e.c.Client.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=VerticalPodAutoscaler"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ev := range evs.Items {
		seen[ev.Reason] = true
	}
	if !seen["HPAScalePointRecorded"] || !seen["HPATargetRetuned"] || seen["HPARetuneFailed"] {
		t.Errorf("events on the VPA: %v", seen)
	}
}

// near allows for metrics-server's rate of KWOK's usage being a millicore
// off.
func near(got, want int32) bool { return got >= want-1 && got <= want+1 }

func currentUtilization(h *autoscalingv2.HorizontalPodAutoscaler) int32 {
	for _, m := range h.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			return *m.Resource.Current.AverageUtilization
		}
	}
	return -1
}
