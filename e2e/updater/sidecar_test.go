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

package updater

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/annotations"
)

const sidecarGate = "--feature-gates=NativeSidecar=true"

// historyCheckpoint is a checkpoint of a day of steady usage: all CPU in
// bucket cpuBucket and all memory in bucket memBucket.
func historyCheckpoint(ns, vpa, container string, cpuBucket, memBucket int) *vpav1.VerticalPodAutoscalerCheckpoint {
	ref := metav1.NewTime(time.Now().UTC().Truncate(24 * time.Hour))
	return &vpav1.VerticalPodAutoscalerCheckpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vpa + "-" + container},
		Spec:       vpav1.VerticalPodAutoscalerCheckpointSpec{VPAObjectName: vpa, ContainerName: container},
		Status: vpav1.VerticalPodAutoscalerCheckpointStatus{
			LastUpdateTime:    metav1.Now(),
			Version:           "v3",
			CPUHistogram:      vpav1.HistogramCheckpoint{ReferenceTimestamp: ref, BucketWeights: map[int]uint32{cpuBucket: 10000}, TotalWeight: 144},
			MemoryHistogram:   vpav1.HistogramCheckpoint{ReferenceTimestamp: ref, BucketWeights: map[int]uint32{memBucket: 10000}, TotalWeight: 1},
			FirstSampleStart:  metav1.NewTime(time.Now().Add(-24 * time.Hour)),
			LastSampleStart:   metav1.NewTime(time.Now().Add(-time.Minute)),
			TotalSamplesCount: 1440,
		},
	}
}

// TestNativeSidecarIsRecommendedAndPatched runs the recommender and the
// admission controller with NativeSidecar on a Deployment whose pods have a
// native sidecar (proxy) and a regular init container (setup). KWOK reports
// usage only for spec.containers (kwok v0.8.0's metrics loop over
// pod.Spec.Containers), so the sidecar's history comes from a checkpoint, as
// it would after a restart; setup gets one too, and must still get no
// recommendation. New pods get the sidecar's recommendation patched in.
func TestNativeSidecarIsRecommendedAndPatched(t *testing.T) {
	e := setup(t)
	e.c.ApplyRBAC(t, "recommender")
	ctx := context.Background()
	w := framework.Workload{Name: "mesh", Usage: framework.Usage{CPU: "300m", Memory: "200Mi"},
		Containers: []framework.Container{{Name: "app", Requests: framework.Resources("100m", "100Mi")}}}
	d := w.Deployment(e.ns)
	d.Spec.Template.Spec.InitContainers = []corev1.Container{
		{Name: "setup", Image: framework.DefaultImage, Resources: corev1.ResourceRequirements{Requests: framework.Resources("10m", "10Mi")}},
		{Name: "proxy", Image: framework.DefaultImage, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			Resources: corev1.ResourceRequirements{Requests: framework.Resources("10m", "10Mi"), Limits: framework.Resources("20m", "")}},
	}
	if _, err := e.c.Client.AppsV1().Deployments(e.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createBoostVPA(t, "mesh", vpav1.UpdateModeInitial, nil, nil)
	// Bucket 20 of the CPU histogram starts at 330.7m, of the memory one at
	// 330.7 MB: far from the pod minimum and from the sidecar's requests.
	for _, c := range []string{"proxy", "setup"} {
		if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalerCheckpoints(e.ns).Create(ctx, historyCheckpoint(e.ns, "mesh", c, 20, 20), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.c.WaitForPods(t, e.ns, "app=mesh", 1, framework.PodRunning)
	rec := e.c.RunComponent(t, framework.Component{
		Binary: e.c.BuildBinary(t, "./recommender"),
		Args: []string{"--recommender-interval=5s", "--address=127.0.0.1:0", "--vpa-object-namespace=" + e.ns,
			sidecarGate, "--v=3"},
		ServiceAccount: "kube-system/vpa-recommender",
	})
	var target corev1.ResourceList
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		v, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).Get(ctx, "mesh", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if v.Status.Recommendation == nil {
			return false, fmt.Errorf("no recommendation yet")
		}
		got := map[string]corev1.ResourceList{}
		for _, r := range v.Status.Recommendation.ContainerRecommendations {
			got[r.ContainerName] = r.Target
		}
		if _, ok := got["setup"]; ok {
			t.Fatalf("the regular init container setup got a recommendation: %v\n%s", got, rec.Log())
		}
		if _, ok := got["app"]; !ok {
			return false, fmt.Errorf("no recommendation for app yet: %v", got)
		}
		proxy, ok := got["proxy"]
		if !ok {
			return false, fmt.Errorf("no recommendation for the sidecar yet: %v", got)
		}
		target = proxy
		return true, nil
	})
	// From the checkpoint: P90 is the next bucket's start (357.2m), plus the
	// 15% margin: 410m.
	if cpu := target[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("300m")) < 0 || cpu.Cmp(resource.MustParse("450m")) > 0 {
		t.Errorf("sidecar CPU target %s, want it from its history (about 400m)", cpu.String())
	}

	e.runAdmissionController(t, sidecarGate)
	var patched *corev1.Pod
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		p, err := e.c.DryRunPod(e.ns, "mesh")
		if err != nil {
			return false, err
		}
		patched = p
		if p.Annotations[annotations.Updates] == "" {
			return false, fmt.Errorf("pod not patched yet")
		}
		return true, nil
	})
	// A real pod of the Deployment, created now, gets the same.
	if err := e.c.Client.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
		metav1.ListOptions{LabelSelector: "app=mesh"}); err != nil {
		t.Fatal(err)
	}
	pods := e.c.WaitForPods(t, e.ns, "app=mesh", 1, func(p *corev1.Pod) bool {
		return framework.PodRunning(p) && p.Annotations[annotations.Updates] != ""
	})
	for _, p := range []*corev1.Pod{patched, &pods[0]} {
		setup, proxy := p.Spec.InitContainers[0], p.Spec.InitContainers[1]
		if got := proxy.Resources.Requests[corev1.ResourceCPU]; got.Cmp(target[corev1.ResourceCPU]) != 0 {
			t.Errorf("pod %s: sidecar cpu request %s, want the recommendation %s", p.Name, got.String(), target.Cpu().String())
		}
		// The limit keeps the sidecar's 1:2 ratio.
		want := target[corev1.ResourceCPU].DeepCopy()
		want.Add(want)
		if got := proxy.Resources.Limits[corev1.ResourceCPU]; got.Cmp(want) != 0 {
			t.Errorf("pod %s: sidecar cpu limit %s, want %s", p.Name, got.String(), want.String())
		}
		if got := setup.Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("10m")) != 0 {
			t.Errorf("pod %s: the regular init container was patched to %s", p.Name, got.String())
		}
		if got := p.Annotations[annotations.ObservedContainers]; got != "app, proxy" {
			t.Errorf("pod %s: %s = %q", p.Name, annotations.ObservedContainers, got)
		}
	}
}

// TestNativeSidecarOutsideItsBoundsIsUpdated runs the updater and the
// admission controller with NativeSidecar on a Deployment whose containers
// already request their recommendation while its native sidecar is far
// below its own: the pods are evicted for the sidecar alone and come back
// with the sidecar's recommendation.
func TestNativeSidecarOutsideItsBoundsIsUpdated(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	w := framework.Workload{Name: "side", Replicas: 2,
		Containers: []framework.Container{{Name: "app", Requests: framework.Resources("100m", "100Mi")}}}
	d := w.Deployment(e.ns)
	d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: framework.DefaultImage,
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Requests: framework.Resources("10m", "10Mi")}}}
	if _, err := e.c.Client.AppsV1().Deployments(e.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	original := uids(e.c.WaitForPods(t, e.ns, "app=side", 2, framework.PodReady))
	e.runAdmissionController(t, sidecarGate)
	v := e.createVPA(t, "side", vpav1.UpdateModeRecreate, "100m", "100Mi")
	proxy := framework.Resources("200m", "200Mi")
	v.Status.Recommendation.ContainerRecommendations = append(v.Status.Recommendation.ContainerRecommendations, vpav1.RecommendedContainerResources{
		ContainerName: "proxy", Target: proxy, LowerBound: framework.Resources("180m", "180Mi"), UpperBound: framework.Resources("220m", "220Mi"), UncappedTarget: proxy,
	})
	if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).UpdateStatus(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The updater evicts as soon as its informer has this second status write; the pods that
	// replace the evicted ones must find it in the webhook's too.
	e.admittedPod(t, "side", func(p *corev1.Pod) error { return containerRequests(p, "proxy", proxy) })
	p := e.runUpdater(t, sidecarGate)
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		pods := e.pods(t, "side")
		fresh := 0
		for _, pod := range pods {
			if original[pod.UID] || pod.DeletionTimestamp != nil {
				continue
			}
			got := pod.Spec.InitContainers[0].Resources.Requests
			if got.Cpu().Cmp(proxy[corev1.ResourceCPU]) != 0 || got.Memory().Cmp(proxy[corev1.ResourceMemory]) != 0 {
				t.Fatalf("new pod %s has sidecar requests %v, want %v\n%s", pod.Name, got, proxy, p.Log())
			}
			fresh++
		}
		if fresh < 2 {
			return false, fmt.Errorf("%d of 2 pods replaced", fresh)
		}
		return true, nil
	})
	e.waitForEvents(t, map[string]int{"EvictedByVPA": 2})
}
