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

// Package cluster checks that the local control plane behaves like a real cluster wherever
// OpenVPA looks: KWOK nodes and pods, metrics through metrics.k8s.io, in-place resize with the
// kubelet's conditions, evictions under PodDisruptionBudgets, OOM kills, the VPA CRDs, and that
// hack/cluster starts and stops cleanly.
package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/openvpa/openvpa/e2e/framework"
)

func TestNodesReady(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if ready < 2 {
		t.Errorf("%d Ready KWOK nodes, want at least 2", ready)
	}
}

func TestDeploymentRunning(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	c.CreateDeployment(t, ns, framework.Workload{Name: "web", Replicas: 3})
	pods := c.WaitForPods(t, ns, "app=web", 3, framework.PodReady)
	for _, p := range pods {
		if len(p.Status.ContainerStatuses) != 1 {
			t.Fatalf("pod %s has %d container statuses, want 1", p.Name, len(p.Status.ContainerStatuses))
		}
		cs := p.Status.ContainerStatuses[0]
		if cs.Resources == nil || !cs.Resources.Requests.Cpu().Equal(resource.MustParse("100m")) {
			t.Errorf("pod %s: status resources = %v, want the spec's requests (100m CPU)", p.Name, cs.Resources)
		}
		if cs.State.Running == nil || !cs.Ready {
			t.Errorf("pod %s: container not running and ready: %+v", p.Name, cs)
		}
	}
}

func TestReadinessDelay(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	const delay = 8 * time.Second
	c.CreatePod(t, ns, framework.Workload{Name: "slow", ReadyAfter: delay})
	running := c.WaitForPod(t, ns, "slow", framework.PodRunning)
	if framework.PodReady(running) {
		t.Fatalf("pod is Ready as soon as it runs; want Ready only after %s", delay)
	}
	ready := c.WaitForPod(t, ns, "slow", framework.PodReady)
	var readyAt time.Time
	for _, cond := range ready.Status.Conditions {
		if cond.Type == corev1.PodReady {
			readyAt = cond.LastTransitionTime.Time
		}
	}
	started := ready.Status.StartTime.Time
	// Condition times have second precision.
	if got := readyAt.Sub(started); got < delay-time.Second {
		t.Errorf("pod became Ready %s after it started, want about %s", got, delay)
	}
}

// topPods returns kubectl top's CPU and memory columns by pod name.
func topPods(c *framework.Cluster, ns string) (map[string][2]string, error) {
	out, err := c.KubectlE("top", "pods", "--namespace", ns, "--no-headers")
	if err != nil {
		return nil, err
	}
	rows := map[string][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			rows[f[0]] = [2]string{f[1], f[2]}
		}
	}
	return rows, nil
}

// near reports whether a kubectl top quantity is within tolerance of want. CPU is integrated
// from a counter, so it may be off by a millicore or two.
func near(got, want, tolerance string) bool {
	g, err := resource.ParseQuantity(got)
	if err != nil {
		return false
	}
	diff := g.DeepCopy()
	diff.Sub(resource.MustParse(want))
	if diff.Sign() < 0 {
		diff.Neg()
	}
	return diff.Cmp(resource.MustParse(tolerance)) <= 0
}

func TestTopPodsReportsAnnotatedUsage(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	c.CreateDeployment(t, ns, framework.Workload{
		Name:     "web",
		Replicas: 3,
		Usage:    framework.Usage{CPU: "250m", Memory: "100Mi"},
	})
	pods := c.WaitForPods(t, ns, "app=web", 3, framework.PodRunning)

	// metrics-server needs two scrapes (10 s apart) before it reports a pod.
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		rows, err := topPods(c, ns)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			row, ok := rows[p.Name]
			if !ok || !near(row[0], "250m", "3m") || row[1] != "100Mi" {
				return false, fmt.Errorf("kubectl top for %s: %v, want 250m 100Mi", p.Name, row)
			}
		}
		return true, nil
	})

	changed := pods[0].Name
	c.SetUsage(t, ns, changed, framework.Usage{CPU: "500m", Memory: "300Mi"})
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		rows, err := topPods(c, ns)
		if err != nil {
			return false, err
		}
		row := rows[changed]
		if !near(row[0], "500m", "5m") || row[1] != "300Mi" {
			return false, fmt.Errorf("kubectl top for %s: %v, want 500m 300Mi", changed, row)
		}
		return true, nil
	})
	t.Log(c.Kubectl(t, "top", "pods", "--namespace", ns))
}

// resize patches a pod's container through the pods/resize subresource.
func resize(t *testing.T, c *framework.Cluster, ns, pod, container string, requests, limits corev1.ResourceList) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":{"requests":%s,"limits":%s}}]}}`,
		container, jsonList(requests), jsonList(limits))
	_, err := c.Client.CoreV1().Pods(ns).Patch(context.Background(), pod, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatalf("resizing %s/%s: %v", ns, pod, err)
	}
}

func jsonList(rl corev1.ResourceList) string {
	parts := []string{}
	for name, q := range rl {
		parts = append(parts, fmt.Sprintf("%q:%q", name, q.String()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func condition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestInPlaceResize(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	// A resize delay makes the PodResizeInProgress phase long enough to observe.
	c.CreatePod(t, ns, framework.Workload{
		Name:        "resizable",
		Containers:  []framework.Container{{Name: "app", Requests: framework.Resources("100m", "64Mi"), Limits: framework.Resources("", "128Mi")}},
		Annotations: map[string]string{framework.AnnotationResizeDelay: "3s"},
	})
	c.WaitForPod(t, ns, "resizable", framework.PodReady)

	resize(t, c, ns, "resizable", "app", framework.Resources("300m", "80Mi"), framework.Resources("", "256Mi"))
	c.WaitForPod(t, ns, "resizable", func(p *corev1.Pod) bool {
		cond := condition(p, corev1.PodResizeInProgress)
		return cond != nil && cond.Status == corev1.ConditionTrue
	})
	done := c.WaitForPod(t, ns, "resizable", func(p *corev1.Pod) bool {
		return condition(p, corev1.PodResizeInProgress) == nil &&
			p.Status.ContainerStatuses[0].Resources.Requests.Cpu().Equal(resource.MustParse("300m"))
	})

	cs := done.Status.ContainerStatuses[0]
	if !cs.Resources.Requests.Memory().Equal(resource.MustParse("80Mi")) || !cs.Resources.Limits.Memory().Equal(resource.MustParse("256Mi")) {
		t.Errorf("status resources = %v, want requests 300m/80Mi and limit 256Mi", cs.Resources)
	}
	if !cs.AllocatedResources.Cpu().Equal(resource.MustParse("300m")) {
		t.Errorf("allocatedResources = %v, want 300m CPU", cs.AllocatedResources)
	}
	if cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("container restarted or stopped during the resize: %+v", cs)
	}
	if done.Generation != 2 || done.Status.ObservedGeneration != done.Generation {
		t.Errorf("generation %d, observedGeneration %d; want both 2", done.Generation, done.Status.ObservedGeneration)
	}
}

func TestResizePending(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{framework.ResizeInfeasible, framework.ResizeDeferred} {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			c := framework.Start(t)
			ns := c.NewNamespace(t)
			c.CreatePod(t, ns, framework.Workload{
				Name:        "stuck",
				Annotations: map[string]string{framework.AnnotationResize: reason},
			})
			c.WaitForPod(t, ns, "stuck", framework.PodReady)

			resize(t, c, ns, "stuck", "app", framework.Resources("4", "64Mi"), nil)
			pending := c.WaitForPod(t, ns, "stuck", func(p *corev1.Pod) bool {
				cond := condition(p, corev1.PodResizePending)
				return cond != nil && cond.Status == corev1.ConditionTrue && cond.Reason == reason
			})
			if got := pending.Status.ContainerStatuses[0].Resources.Requests.Cpu(); !got.Equal(resource.MustParse("100m")) {
				t.Errorf("a %s resize was actuated: status CPU %s, want 100m", reason, got)
			}
			if cond := condition(pending, corev1.PodResizePending); cond.ObservedGeneration != pending.Generation {
				t.Errorf("PodResizePending observedGeneration %d, want %d", cond.ObservedGeneration, pending.Generation)
			}

			// Once the node "has room" (annotation removed), the resize goes through.
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, framework.AnnotationResize)
			_, err := c.Client.CoreV1().Pods(ns).Patch(context.Background(), "stuck", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c.WaitForPod(t, ns, "stuck", func(p *corev1.Pod) bool {
				return condition(p, corev1.PodResizePending) == nil && condition(p, corev1.PodResizeInProgress) == nil &&
					p.Status.ContainerStatuses[0].Resources.Requests.Cpu().Equal(resource.MustParse("4"))
			})
		})
	}
}

// TestEvictionHonoursPDB checks the Eviction API against a PodDisruptionBudget: of two ready pods
// under minAvailable 1, one may be evicted and the other not, until a new ready pod restores the
// budget. The pods are bare, with no controller: a Deployment's replacement pod becomes Ready at
// once on KWOK, and the disruption controller then rightly allows a second eviction, so a test
// built on one races the controller.
func TestEvictionHonoursPDB(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	ctx := context.Background()
	web := map[string]string{"app": "web"}
	for _, name := range []string{"web-0", "web-1"} {
		c.CreatePod(t, ns, framework.Workload{Name: name, Labels: web})
	}
	c.WaitForPods(t, ns, "app=web", 2, framework.PodReady)

	minAvailable := intstr.FromInt32(1)
	_, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: web},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The Eviction API refuses evictions until the disruption controller has computed the status.
	waitDisruptionsAllowed := func(want int32) {
		t.Helper()
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			pdb, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.DisruptionsAllowed != want {
				return false, fmt.Errorf("observedGeneration %d of %d, disruptionsAllowed %d, want %d",
					pdb.Status.ObservedGeneration, pdb.Generation, pdb.Status.DisruptionsAllowed, want)
			}
			return true, nil
		})
	}
	waitDisruptionsAllowed(1)

	evict := func(pod string) error {
		return c.Client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		})
	}
	if err := evict("web-0"); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	// The eviction spent the budget in the PDB's status, and with one healthy pod left and no
	// controller to replace web-0, nothing can restore it.
	err = evict("web-1")
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: got %v, want 429 TooManyRequests (the PDB allows one disruption)", err)
	}
	t.Logf("second eviction refused: %v", err)

	// The evicted pod is deleted (KWOK removes it at once).
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		_, err := c.Client.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// A new ready pod restores the budget, and the refused eviction goes through.
	c.CreatePod(t, ns, framework.Workload{Name: "web-2", Labels: web})
	c.WaitForPod(t, ns, "web-2", framework.PodReady)
	waitDisruptionsAllowed(1)
	if err := evict("web-1"); err != nil {
		t.Fatalf("eviction after the budget was restored: %v", err)
	}
}

func TestOOMKill(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	limited := []framework.Container{{Name: "app", Requests: framework.Resources("100m", "64Mi"), Limits: framework.Resources("", "128Mi")}}
	c.CreatePod(t, ns, framework.Workload{Name: "within", Containers: limited, Usage: framework.Usage{Memory: "100Mi"}})
	c.CreatePod(t, ns, framework.Workload{Name: "above", Containers: limited, Usage: framework.Usage{Memory: "200Mi"}})

	oom := c.WaitForPod(t, ns, "above", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	cs := oom.Status.ContainerStatuses[0]
	term := cs.LastTerminationState.Terminated
	if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Fatalf("lastState = %+v, want terminated with reason OOMKilled and exit code 137", cs.LastTerminationState)
	}
	if cs.State.Running == nil || term.FinishedAt.IsZero() {
		t.Errorf("container not restarted after the OOM kill: state %+v", cs.State)
	}

	within := c.WaitForPod(t, ns, "within", framework.PodReady)
	if n := within.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("pod using less than its limit restarted %d times", n)
	}
}
