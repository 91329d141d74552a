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

// Package recommender holds the recommender's end-to-end tests: the
// vpa-recommender binary runs as a subprocess acting as the
// kube-system/vpa-recommender ServiceAccount (RBAC from
// deploy/rbac/recommender.yaml), scoped to the test's namespace (or to a
// recommender name unique to the test), against the local control plane with
// KWOK pods whose usage metrics-server reports.
package recommender

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
)

type env struct {
	c   *framework.Cluster
	ns  string
	vpa vpaclient.Interface
}

func setup(t *testing.T) *env {
	t.Helper()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "recommender")
	return &env{c: c, ns: c.NewNamespace(t), vpa: vpaclient.NewForConfigOrDie(c.Config)}
}

// fastFlags are the short intervals every test runs with.
func fastFlags() []string {
	return []string{
		"--recommender-interval=5s",
		"--checkpoints-gc-interval=10s",
		"--checkpoints-write-interval=5s",
		"--address=127.0.0.1:0",
		"--v=3",
	}
}

// run starts the recommender with the given flags as its ServiceAccount.
func (e *env) run(t *testing.T, args ...string) *framework.Process {
	t.Helper()
	return e.c.RunComponent(t, framework.Component{
		Binary:         e.c.BuildBinary(t, "./recommender"),
		Args:           append(fastFlags(), args...),
		ServiceAccount: "kube-system/vpa-recommender",
	})
}

// runKillable starts the recommender through a shell that records its PID, so
// the test can SIGKILL it.
func (e *env) runKillable(t *testing.T, pidFile string, args ...string) *framework.Process {
	t.Helper()
	bin := e.c.BuildBinary(t, "./recommender")
	script := `echo $$ > "$0"; exec "$@"`
	all := append([]string{"-c", script, pidFile, bin}, append(fastFlags(), args...)...)
	return e.c.RunComponent(t, framework.Component{
		Name:           "vpa-recommender",
		Binary:         "/bin/sh",
		Args:           all,
		ServiceAccount: "kube-system/vpa-recommender",
	})
}

func kill(t *testing.T, p *framework.Process, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		done, _ := p.Exited()
		return done, nil
	})
}

type vpaOpt func(*vpav1.VerticalPodAutoscaler)

func recommenders(names ...string) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) {
		for _, n := range names {
			v.Spec.Recommenders = append(v.Spec.Recommenders, &vpav1.VerticalPodAutoscalerRecommenderSelector{Name: n})
		}
	}
}

// createVPA creates an Off-mode VPA targeting apiVersion/kind/name in ns.
func (e *env) createVPA(t *testing.T, ns, name, apiVersion, kind, target string, opts ...vpaOpt) {
	t.Helper()
	off := vpav1.UpdateModeOff
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: target},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &off},
		},
	}
	for _, o := range opts {
		o(v)
	}
	if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(ns).Create(context.Background(), v, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) getVPA(ns, name string) (*vpav1.VerticalPodAutoscaler, error) {
	return e.vpa.AutoscalingV1().VerticalPodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func recommendation(v *vpav1.VerticalPodAutoscaler, container string) *vpav1.RecommendedContainerResources {
	if v.Status.Recommendation == nil {
		return nil
	}
	for i := range v.Status.Recommendation.ContainerRecommendations {
		if r := &v.Status.Recommendation.ContainerRecommendations[i]; r.ContainerName == container {
			return r
		}
	}
	return nil
}

// waitForTarget waits until the VPA recommends exactly cpu and memory for
// container and returns it.
func (e *env) waitForTarget(t *testing.T, ns, name, container, cpu, memory string) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	var v *vpav1.VerticalPodAutoscaler
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		var err error
		if v, err = e.getVPA(ns, name); err != nil {
			return false, err
		}
		r := recommendation(v, container)
		if r == nil {
			return false, fmt.Errorf("no recommendation yet; status %+v", v.Status)
		}
		c, m := r.Target[corev1.ResourceCPU], r.Target[corev1.ResourceMemory]
		if c.Cmp(resource.MustParse(cpu)) != 0 || m.Cmp(resource.MustParse(memory)) != 0 {
			return false, fmt.Errorf("target %s / %s, want %s / %s", c.String(), m.String(), cpu, memory)
		}
		return true, nil
	})
	return v
}

// steady is the workload of the upstream-equality scenario.
func steady(name string) framework.Workload {
	return framework.Workload{Name: name, Usage: framework.Usage{CPU: "300m", Memory: "200Mi"}}
}

func TestSteadyUsageGetsUpstreamTarget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, steady("web"))
	e.createVPA(t, e.ns, "web", "apps/v1", "Deployment", "web")
	e.run(t, "--vpa-object-namespace="+e.ns)

	// P90 bucket upper edge 0.30539 core → 305m × 1.15 = 350m; memory below
	// the 250Mi pod minimum.
	v := e.waitForTarget(t, e.ns, "web", "app", "350m", "250Mi")
	if c := framework.Condition(v, vpav1.RecommendationProvided); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("RecommendationProvided = %+v, want True", c)
	}
	if c := framework.Condition(v, vpav1.LowConfidence); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("LowConfidence = %+v, want True with minutes of history", c)
	}
	out := e.c.Kubectl(t, "describe", "vpa", "-n", e.ns, "web")
	for _, want := range []string{"Recommendation Provided", "350m", "250Mi", "Container Name:  app", "Target:"} {
		if !strings.Contains(strings.ReplaceAll(out, "RecommendationProvided", "Recommendation Provided"), want) {
			t.Errorf("kubectl describe vpa lacks %q:\n%s", want, out)
		}
	}
	get := e.c.Kubectl(t, "get", "vpa", "-n", e.ns, "web")
	if !strings.Contains(get, "350m") || !strings.Contains(get, "250Mi") || !strings.Contains(get, "True") {
		t.Errorf("kubectl get vpa does not show the recommendation:\n%s", get)
	}
}

func (e *env) checkpoint(t *testing.T, name string) (*vpav1.VerticalPodAutoscalerCheckpoint, error) {
	return e.vpa.AutoscalingV1().VerticalPodAutoscalerCheckpoints(e.ns).Get(context.Background(), name, metav1.GetOptions{})
}

func bounds(t *testing.T, v *vpav1.VerticalPodAutoscaler) (lower, upper corev1.ResourceList) {
	t.Helper()
	r := recommendation(v, "app")
	if r == nil {
		t.Fatalf("no recommendation in %+v", v.Status)
	}
	return r.LowerBound, r.UpperBound
}

func TestRestartContinuesFromCheckpoints(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, steady("web"))
	e.createVPA(t, e.ns, "web", "apps/v1", "Deployment", "web")
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := e.runKillable(t, pidFile, "--vpa-object-namespace="+e.ns)

	// Let some history accumulate and be checkpointed.
	var samples int
	framework.WaitFor(t, 4*time.Minute, func() (bool, error) {
		cp, err := e.checkpoint(t, "web-app")
		if err != nil {
			return false, err
		}
		samples = cp.Status.TotalSamplesCount
		if samples < 4 {
			return false, fmt.Errorf("checkpoint has %d samples", samples)
		}
		return true, nil
	})
	before, err := e.getVPA(e.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	lowerBefore, upperBefore := bounds(t, before)
	kill(t, p, pidFile)
	cp, err := e.checkpoint(t, "web-app")
	if err != nil {
		t.Fatal(err)
	}
	saved := cp.Status.TotalSamplesCount
	if saved < samples {
		t.Fatalf("checkpoint lost samples: %d < %d", saved, samples)
	}

	e.run(t, "--vpa-object-namespace="+e.ns)
	// Every status the new process writes must come from the restored
	// history: a recommender starting from scratch would put the upper bound
	// orders of magnitude higher (confidence near zero).
	limit := upperBefore[corev1.ResourceCPU]
	limit.Add(limit) // 2× the old upper bound
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		v, err := e.getVPA(e.ns, "web")
		if err != nil {
			return false, err
		}
		lower, upper := bounds(t, v)
		if u := upper[corev1.ResourceCPU]; u.Cmp(limit) > 0 {
			t.Fatalf("upper CPU bound jumped after restart: %s -> %s (history not restored)", upperBefore.Cpu().String(), u.String())
		}
		cp, err := e.checkpoint(t, "web-app")
		if err != nil {
			return false, err
		}
		if cp.Status.TotalSamplesCount < saved {
			t.Fatalf("checkpoint sample count went back from %d to %d", saved, cp.Status.TotalSamplesCount)
		}
		if cp.Status.TotalSamplesCount <= saved {
			return false, fmt.Errorf("checkpoint not rewritten yet (%d samples)", cp.Status.TotalSamplesCount)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l, lb := lower[r], lowerBefore[r]
			if l.Cmp(lb) < 0 {
				return false, fmt.Errorf("lower %s bound %s still below %s", r, l.String(), lb.String())
			}
		}
		return true, nil
	})
}

func TestCheckpointsOfDeletedVPAAreCollected(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, steady("web"))
	e.createVPA(t, e.ns, "web", "apps/v1", "Deployment", "web")
	e.run(t, "--vpa-object-namespace="+e.ns)
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		_, err := e.checkpoint(t, "web-app")
		return err == nil, err
	})
	if err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		_, err := e.checkpoint(t, "web-app")
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("checkpoint still there (err %v)", err)
	})
}

func TestReplicaSetOfDeploymentIsUnsupported(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, steady("web"))
	var rsName string
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		l, err := e.c.Client.AppsV1().ReplicaSets(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(l.Items) == 0 {
			return false, err
		}
		rsName = l.Items[0].Name
		return true, nil
	})
	e.createVPA(t, e.ns, "rs", "apps/v1", "ReplicaSet", rsName)
	e.run(t, "--vpa-object-namespace="+e.ns)
	want := fmt.Sprintf("The target apps/v1.ReplicaSet/%s has a parent controller but it should point to a topmost well-known or scalable controller", rsName)
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		v, err := e.getVPA(e.ns, "rs")
		if err != nil {
			return false, err
		}
		c := framework.Condition(v, vpav1.ConfigUnsupported)
		if c == nil || c.Status != corev1.ConditionTrue || c.Message != want {
			return false, fmt.Errorf("ConfigUnsupported = %+v", c)
		}
		return true, nil
	})
}

func TestCustomResourceWithScaleSubresource(t *testing.T) {
	t.Parallel()
	e := setup(t)
	group := e.ns + ".e2e.openvpa.io"
	crd := framework.CustomKindCRD(group, "Scaler", "scalers", true)
	path := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(path, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	e.c.Kubectl(t, "apply", "-f", path)
	t.Cleanup(func() { _, _ = e.c.KubectlE("delete", "-f", path, "--wait=false") })
	e.c.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/scalers."+group)

	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "scalers"}
	ctx := context.Background()
	var created *unstructured.Unstructured
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		var err error
		created, err = e.c.Dynamic.Resource(gvr).Namespace(e.ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Scaler",
			"metadata": map[string]any{"name": "custom"},
			"spec":     map[string]any{"replicas": int64(1)},
		}}, metav1.CreateOptions{})
		return err == nil, err
	})
	created.Object["status"] = map[string]any{"replicas": int64(1), "selector": "app=custom"}
	if _, err := e.c.Dynamic.Resource(gvr).Namespace(e.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := steady("custom")
	pod := w.Pod(e.ns)
	pod.Name = "custom-0"
	yes := true
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: group + "/v1", Kind: "Scaler", Name: "custom", UID: created.GetUID(), Controller: &yes}}
	if _, err := e.c.Client.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createVPA(t, e.ns, "custom", group+"/v1", "Scaler", "custom")
	e.run(t, "--vpa-object-namespace="+e.ns)
	v := e.waitForTarget(t, e.ns, "custom", "app", "350m", "250Mi")
	if c := framework.Condition(v, vpav1.ConfigUnsupported); c != nil {
		t.Errorf("ConfigUnsupported set for a scalable custom resource: %+v", c)
	}
}

// twoNamespaces creates a second namespace and the same workload and VPA in
// both, all naming the recommender rec.
func (e *env) twoNamespaces(t *testing.T, rec string) (a, b string) {
	t.Helper()
	a, b = e.ns, e.c.NewNamespace(t)
	for _, ns := range []string{a, b} {
		e.c.CreateDeployment(t, ns, steady("web"))
		e.createVPA(t, ns, "web", "apps/v1", "Deployment", "web", recommenders(rec))
	}
	return a, b
}

// assertUntouched checks, after the handled VPA got its recommendation and a
// few more loops ran, that the other VPA still has no status.
func (e *env) assertUntouched(t *testing.T, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(12 * time.Second) // more than two loops
	for time.Now().Before(deadline) {
		v, err := e.getVPA(ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status.Recommendation != nil || len(v.Status.Conditions) > 0 {
			t.Fatalf("VPA %s/%s was handled: %+v", ns, name, v.Status)
		}
		time.Sleep(framework.PollInterval)
	}
}

func TestNamespaceFlags(t *testing.T) {
	t.Parallel()
	t.Run("vpa-object-namespace", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		rec := "e2e-" + e.ns
		a, b := e.twoNamespaces(t, rec)
		e.run(t, "--recommender-name="+rec, "--vpa-object-namespace="+a)
		e.waitForTarget(t, a, "web", "app", "350m", "250Mi")
		e.assertUntouched(t, b, "web")
	})
	t.Run("ignored-vpa-object-namespaces", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		// A recommender name unique to this test keeps the cluster-wide
		// recommender away from other tests' VPAs.
		rec := "e2e-" + e.ns
		a, b := e.twoNamespaces(t, rec)
		e.run(t, "--recommender-name="+rec, "--ignored-vpa-object-namespaces="+b)
		e.waitForTarget(t, a, "web", "app", "350m", "250Mi")
		e.assertUntouched(t, b, "web")
	})
}

func TestOtherRecommendersVPAIsLeftAlone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, steady("web"))
	e.createVPA(t, e.ns, "mine", "apps/v1", "Deployment", "web")
	e.createVPA(t, e.ns, "theirs", "apps/v1", "Deployment", "web", recommenders("someone-else"))
	e.run(t, "--vpa-object-namespace="+e.ns)
	e.waitForTarget(t, e.ns, "mine", "app", "350m", "250Mi")
	e.assertUntouched(t, e.ns, "theirs")
}

func TestGracefulShutdownWritesCheckpoints(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, steady("web"))
	e.createVPA(t, e.ns, "web", "apps/v1", "Deployment", "web")
	// A write interval far longer than the test: only the shutdown can be
	// relied on to write (the first scheduled write falls somewhere in the
	// first hour).
	p := e.run(t, "--vpa-object-namespace="+e.ns, "--checkpoints-write-interval=24h")
	e.waitForTarget(t, e.ns, "web", "app", "350m", "250Mi")
	stopped := time.Now().Add(-time.Second).Truncate(time.Second)
	p.Stop(t)
	if done, err := p.Exited(); !done || err != nil {
		t.Fatalf("recommender did not exit cleanly after SIGTERM: exited=%v err=%v\n%s", done, err, p.Log())
	}
	cp, err := e.checkpoint(t, "web-app")
	if err != nil {
		t.Fatalf("no checkpoint after graceful shutdown: %v\n%s", err, p.Log())
	}
	if cp.Status.LastUpdateTime.Time.Before(stopped) || cp.Status.TotalSamplesCount == 0 {
		t.Errorf("checkpoint not written at shutdown: lastUpdateTime %v (stop at %v), %d samples",
			cp.Status.LastUpdateTime, stopped, cp.Status.TotalSamplesCount)
	}
}
