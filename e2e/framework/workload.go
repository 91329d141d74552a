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

package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/testbuild"
)

// Pod annotations read by the cluster's KWOK configuration (hack/cluster/conf/kwok.yaml).
const (
	// AnnotationUsageCPU is the simulated CPU usage of every container of the pod, e.g. "250m".
	AnnotationUsageCPU = "kwok.x-k8s.io/usage-cpu"
	// AnnotationUsageMemory is the simulated memory usage of every container of the pod, e.g.
	// "100Mi". A container whose memory limit is below it is OOM-killed (and again, with
	// crash-loop back-off, while it stays below).
	AnnotationUsageMemory = "kwok.x-k8s.io/usage-memory"
	// AnnotationReadyDelay delays the pod's readiness after its containers start, e.g. "4s".
	AnnotationReadyDelay = "pod-ready.stage.kwok.x-k8s.io/delay"
	// AnnotationResizeDelay is how long an accepted in-place resize stays in progress, e.g. "2s".
	AnnotationResizeDelay = "pod-resize.stage.kwok.x-k8s.io/delay"
	// AnnotationResize set to ResizeInfeasible or ResizeDeferred makes in-place resizes of the pod
	// stay pending with that reason in the PodResizePending condition.
	AnnotationResize = "openvpa.io/kwok-resize"

	ResizeInfeasible = "Infeasible"
	ResizeDeferred   = "Deferred"
)

// DefaultImage is the image of workload containers. It is never pulled: KWOK only fakes status.
const DefaultImage = "registry.k8s.io/pause:3.10"

// Usage is simulated resource usage; empty fields leave KWOK's defaults (1m CPU, 1Mi memory).
type Usage struct {
	CPU    string
	Memory string
}

// Container is one container of a Workload.
type Container struct {
	Name     string
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
}

// Workload describes pods with simulated usage, for a Deployment or a bare Pod.
type Workload struct {
	// Name of the Deployment or Pod; pods get the label app=<Name>.
	Name string
	// Replicas of a Deployment; 0 means 1.
	Replicas int32
	// Containers; none means one container "app" requesting 100m CPU and 64Mi memory.
	Containers []Container
	// Usage becomes the pods' usage annotations.
	Usage Usage
	// ReadyAfter delays the pods' readiness after they start running.
	ReadyAfter time.Duration
	// Labels and Annotations are added to the pods.
	Labels      map[string]string
	Annotations map[string]string
}

// Resources is a shorthand for a CPU and memory ResourceList; an empty string leaves the
// resource out.
func Resources(cpu, memory string) corev1.ResourceList { return testbuild.Resources(cpu, memory) }

// UsageAnnotations returns the pod annotations for u.
func (u Usage) UsageAnnotations() map[string]string {
	a := map[string]string{}
	if u.CPU != "" {
		a[AnnotationUsageCPU] = u.CPU
	}
	if u.Memory != "" {
		a[AnnotationUsageMemory] = u.Memory
	}
	return a
}

// PodTemplate returns the pod template of the workload.
func (w Workload) PodTemplate() corev1.PodTemplateSpec {
	labels := map[string]string{"app": w.Name}
	for k, v := range w.Labels {
		labels[k] = v
	}
	annotations := w.Usage.UsageAnnotations()
	if w.ReadyAfter > 0 {
		annotations[AnnotationReadyDelay] = w.ReadyAfter.String()
	}
	for k, v := range w.Annotations {
		annotations[k] = v
	}
	containers := w.Containers
	if len(containers) == 0 {
		containers = []Container{{Name: "app", Requests: Resources("100m", "64Mi")}}
	}
	var spec corev1.PodSpec
	for _, c := range containers {
		spec.Containers = append(spec.Containers, corev1.Container{
			Name:      c.Name,
			Image:     DefaultImage,
			Resources: corev1.ResourceRequirements{Requests: c.Requests, Limits: c.Limits},
		})
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec:       spec,
	}
}

// Deployment returns the workload as a Deployment in namespace ns.
func (w Workload) Deployment(ns string) *appsv1.Deployment {
	replicas := w.Replicas
	if replicas == 0 {
		replicas = 1
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: ns, Labels: map[string]string{"app": w.Name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.Name}},
			Template: w.PodTemplate(),
		},
	}
}

// Pod returns the workload as a single Pod in namespace ns.
func (w Workload) Pod(ns string) *corev1.Pod {
	tmpl := w.PodTemplate()
	tmpl.ObjectMeta.Name = w.Name
	tmpl.ObjectMeta.Namespace = ns
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}

// CreateDeployment creates the workload as a Deployment in ns.
func (c *Cluster) CreateDeployment(t testing.TB, ns string, w Workload) *appsv1.Deployment {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments(ns).Create(context.Background(), w.Deployment(ns), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating deployment %s/%s: %v", ns, w.Name, err)
	}
	return d
}

// CreatePod creates the workload as a bare Pod in ns.
func (c *Cluster) CreatePod(t testing.TB, ns string, w Workload) *corev1.Pod {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), w.Pod(ns), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, w.Name, err)
	}
	return p
}

// PodCondition is a predicate on a pod for WaitForPods.
type PodCondition func(*corev1.Pod) bool

// PodRunning is true for a pod in phase Running that is not being deleted.
func PodRunning(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}

// PodReady is true for a running pod whose Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	if !PodRunning(p) {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitForPods waits until exactly n pods in ns match the label selector and all of them satisfy
// cond, and returns them.
func (c *Cluster) WaitForPods(t testing.TB, ns, selector string, n int, cond PodCondition) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	WaitFor(t, 2*time.Minute, func() (bool, error) {
		list, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		if len(list.Items) != n {
			return false, fmt.Errorf("%d pods match %q, want %d", len(list.Items), selector, n)
		}
		for i := range list.Items {
			if !cond(&list.Items[i]) {
				return false, fmt.Errorf("pod %s (phase %s) does not meet the condition yet", list.Items[i].Name, list.Items[i].Status.Phase)
			}
		}
		pods = list.Items
		return true, nil
	})
	return pods
}

// WaitForPod waits until the pod satisfies cond and returns it.
func (c *Cluster) WaitForPod(t testing.TB, ns, name string, cond PodCondition) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	WaitFor(t, 2*time.Minute, func() (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return cond(p), nil
	})
	return pod
}

// SetUsage changes a running pod's simulated usage; metrics-server reports it after its next
// scrape (every 10 s).
func (c *Cluster) SetUsage(t testing.TB, ns, pod string, u Usage) {
	t.Helper()
	annotations := map[string]any{}
	for k, v := range u.UsageAnnotations() {
		annotations[k] = v
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client.CoreV1().Pods(ns).Patch(context.Background(), pod, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("setting usage of pod %s/%s: %v", ns, pod, err)
	}
}

// Condition returns the VPA's condition of type typ, nil when it has none.
func Condition(v *vpav1.VerticalPodAutoscaler, typ vpav1.VerticalPodAutoscalerConditionType) *vpav1.VerticalPodAutoscalerCondition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == typ {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

// RealNodeLabel is the real node's label and the key of its NoSchedule taint (hack/cluster/node.sh).
const RealNodeLabel = "openvpa.io/real-node"

// MemhogImage is the workload image imported into the real node's containerd (make images).
const MemhogImage = "ghcr.io/openvpa/memhog:local"

// MemhogOnRealNode is a one-replica Deployment of memhog with args, pinned to the real node,
// whose container "hog" has requests and limits.
func MemhogOnRealNode(ns, name string, args []string, requests, limits corev1.ResourceList) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	replicas, grace := int32(1), int64(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{RealNodeLabel: "true"},
					Tolerations:                   []corev1.Toleration{{Key: RealNodeLabel, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "hog", Image: MemhogImage, ImagePullPolicy: corev1.PullNever, Args: args,
						Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
					}},
				},
			},
		},
	}
}
