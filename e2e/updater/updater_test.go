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

// Package updater holds the updater's end-to-end tests: the vpa-updater
// binary runs as a subprocess acting as the kube-system/vpa-updater
// ServiceAccount (RBAC from deploy/rbac/updater.yaml), scoped to the test's
// namespace, against the local control plane with KWOK nodes. VPA
// recommendations are set directly in the VPA status. The Recreate rollout
// test runs the real admission controller, which renews the status Lease in
// the test's namespace; the other tests write that Lease themselves.
package updater

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/status"
	"github.com/openvpa/openvpa/updater/inplace"
)

const leaseName = "vpa-admission-controller"

type env struct {
	c   *framework.Cluster
	ns  string
	vpa vpaclient.Interface
}

func setup(t *testing.T) *env {
	t.Helper()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "updater")
	ns := c.NewNamespace(t)
	return &env{c: c, ns: ns, vpa: vpaclient.NewForConfigOrDie(c.Config)}
}

// runUpdater starts the updater scoped to the test namespace, reading the
// status Lease from it.
func (e *env) runUpdater(t *testing.T, extra ...string) *framework.Process {
	t.Helper()
	args := append([]string{
		"--vpa-object-namespace=" + e.ns,
		"--updater-interval=2s",
		"--address=127.0.0.1:0",
		"--admission-controller-status-lease-namespace=" + e.ns,
		// -v=4 logs loopDone at the end of every loop, which tests count.
		"--v=4",
	}, extra...)
	return e.c.RunComponent(t, framework.Component{
		Binary:         e.c.BuildBinary(t, "./updater"),
		Args:           args,
		ServiceAccount: "kube-system/vpa-updater",
	})
}

// writeLease creates or renews the admission controller's Lease; stale
// back-dates it beyond the timeout.
func (e *env) writeLease(t *testing.T, stale bool) {
	t.Helper()
	ctx := context.Background()
	renew := metav1.NewMicroTime(time.Now())
	if stale {
		renew = metav1.NewMicroTime(time.Now().Add(-time.Hour))
	}
	leases := e.c.Client.CoordinationV1().Leases(e.ns)
	l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		holder := "test"
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: leaseName},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renew},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	l.Spec.RenewTime = &renew
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// keepLeaseFresh renews the Lease every few seconds until the test ends.
func (e *env) keepLeaseFresh(t *testing.T) {
	e.writeLease(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				renew := metav1.NewMicroTime(time.Now())
				l, err := e.c.Client.CoordinationV1().Leases(e.ns).Get(ctx, leaseName, metav1.GetOptions{})
				if err == nil {
					l.Spec.RenewTime = &renew
					_, _ = e.c.Client.CoordinationV1().Leases(e.ns).Update(ctx, l, metav1.UpdateOptions{})
				}
			}
		}
	}()
}

type vpaOpt func(*vpav1.VerticalPodAutoscaler)

func withMinReplicas(n int32) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy.MinReplicas = &n }
}

func withRequirement(r vpav1.EvictionChangeRequirement, res ...corev1.ResourceName) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) {
		v.Spec.UpdatePolicy.EvictionRequirements = append(v.Spec.UpdatePolicy.EvictionRequirements,
			&vpav1.EvictionRequirement{Resources: res, ChangeRequirement: r})
	}
}

// createVPA creates a VPA for Deployment name and sets its recommendation
// for container "app" to target (bounds ±10%).
func (e *env) createVPA(t *testing.T, name string, mode vpav1.UpdateMode, cpu, mem string, opts ...vpaOpt) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	ctx := context.Background()
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}
	for _, o := range opts {
		o(v)
	}
	created, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(ctx, v, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e.setRecommendation(t, created, cpu, mem)
}

func (e *env) setRecommendation(t *testing.T, v *vpav1.VerticalPodAutoscaler, cpu, mem string) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	target := framework.Resources(cpu, mem)
	scale := func(f float64) corev1.ResourceList {
		out := corev1.ResourceList{}
		for k, q := range target {
			out[k] = *resourceScaled(q.MilliValue(), f, k)
		}
		return out
	}
	v.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{
		ContainerName: "app", Target: target, LowerBound: scale(0.9), UpperBound: scale(1.1), UncappedTarget: target,
	}}}
	updated, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).UpdateStatus(context.Background(), v, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

func (e *env) pods(t *testing.T, app string) []corev1.Pod {
	t.Helper()
	list, err := e.c.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func uids(pods []corev1.Pod) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range pods {
		out[p.UID] = true
	}
	return out
}

// loopDone is the updater's log line at the end of each loop (-v=4).
const loopDone = "Updater loop done"

// eventReasons counts the events in the namespace by reason; with about
// not nil, only events about those objects (by UID) count.
func (e *env) eventReasons(t *testing.T, about map[types.UID]bool) map[string]int {
	t.Helper()
	list, err := e.c.Client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, ev := range list.Items {
		if about != nil && !about[ev.InvolvedObject.UID] {
			continue
		}
		out[ev.Reason] += int(max(ev.Count, 1))
	}
	return out
}

// waitForEvents waits until the namespace holds at least the given number
// of events of each reason. Components post events through client-go's
// broadcaster, asynchronously and after the change they report, so a test
// that has just seen the change polls for its event.
func (e *env) waitForEvents(t *testing.T, want map[string]int) map[string]int {
	t.Helper()
	var got map[string]int
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		got = e.eventReasons(t, nil)
		for reason, n := range want {
			if got[reason] < n {
				return false, fmt.Errorf("events %v, want at least %v", got, want)
			}
		}
		return true, nil
	})
	return got
}

// assertNoEviction checks, while the updater p runs loops more of its loops,
// that every original pod of app stays, not terminating, and that no
// eviction event names one of them.
func (e *env) assertNoEviction(t *testing.T, app string, original map[types.UID]bool, p *framework.Process, loops int) {
	t.Helper()
	want := strings.Count(p.Log(), loopDone) + loops
	framework.WaitFor(t, time.Duration(loops)*10*time.Second, func() (bool, error) {
		done := strings.Count(p.Log(), loopDone) >= want
		present := 0
		for _, pod := range e.pods(t, app) {
			if !original[pod.UID] {
				t.Fatalf("pod %s of %s was replaced; the updater must leave it alone\n%s", pod.Name, app, p.Log())
			}
			if pod.DeletionTimestamp != nil {
				t.Fatalf("pod %s of %s is terminating; the updater must leave it alone\n%s", pod.Name, app, p.Log())
			}
			present++
		}
		if present < len(original) {
			t.Fatalf("%d of %d pods of %s left; the updater must leave them alone\n%s", present, len(original), app, p.Log())
		}
		return done, nil
	})
	if r := e.eventReasons(t, original); r["EvictedByVPA"] > 0 {
		t.Fatalf("EvictedByVPA events about pods of %s: %v", app, r)
	}
}

func resourceScaled(milli int64, f float64, name corev1.ResourceName) *resource.Quantity {
	if name == corev1.ResourceCPU {
		return resource.NewMilliQuantity(int64(float64(milli)*f), resource.DecimalSI)
	}
	return resource.NewQuantity(int64(float64(milli)*f/1000), resource.BinarySI)
}

func lowRequests() []framework.Container {
	return []framework.Container{{Name: "app", Requests: framework.Resources("50m", "50Mi")}}
}

// runAdmissionController starts the real admission controller as the
// kube-system/vpa-admission-controller ServiceAccount, registered by URL under
// a webhook configuration named after the test namespace, scoped to that
// namespace and renewing its status Lease there, where the updater reads it.
// It returns once the admission controller is ready and its webhook is
// registered. extra are further flags.
func (e *env) runAdmissionController(t *testing.T, extra ...string) *framework.Process {
	t.Helper()
	e.c.ApplyRBAC(t, "admission-controller")
	port, healthPort := framework.FreePort(t), framework.FreePort(t)
	config := "vpa-webhook-" + e.ns
	e.c.AllowWebhookConfig(t, config)
	t.Cleanup(func() {
		_ = e.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), config, metav1.DeleteOptions{})
	})
	p := e.c.RunComponent(t, framework.Component{
		Name:   "vpa-admission-controller",
		Binary: e.c.BuildBinary(t, "./admission-controller"),
		Args: append([]string{
			"--port=" + strconv.Itoa(port),
			fmt.Sprintf("--address=127.0.0.1:%d", healthPort),
			"--register-by-url", "--webhook-address=https://127.0.0.1", "--webhook-port=" + strconv.Itoa(port),
			"--webhook-config-name=" + config,
			"--webhook-timeout-seconds=5",
			"--self-signed-cert-dir=" + t.TempDir(),
			"--vpa-object-namespace=" + e.ns,
			"--status-lease-namespace=" + e.ns,
			"--status-lease-name=" + leaseName,
			"--status-lease-update-interval=1s",
			"--v=3",
		}, extra...),
		ServiceAccount: "kube-system/vpa-admission-controller",
		Env:            []string{"NAMESPACE=kube-system"},
	})
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		if exited, err := p.Exited(); exited {
			t.Fatalf("admission controller exited: %v\n%s", err, p.Log())
		}
		resp, err := http.Get(readyz)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", readyz, resp.Status)
		}
		_, err = e.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), config, metav1.GetOptions{})
		return err == nil, err
	})
	return p
}

// waitAdmitted waits until a pod of the Deployment created now (server-side
// dry run, so nothing is scheduled) gets want as requests of container "app"
// from the admission controller: its caches know the VPA and its
// recommendation.
func (e *env) waitAdmitted(t *testing.T, deployment string, want corev1.ResourceList) {
	t.Helper()
	e.admittedPod(t, deployment, func(p *corev1.Pod) error { return requestsMatch(p, want) })
}

// admittedPod waits until a pod of the Deployment created now (server-side dry
// run) passes seen, which tells from the pod that the admission controller's
// caches hold the state the test set up (typically: a container requests its
// recommendation, which only a webhook that has the VPA's status gives), and
// returns that pod. The VPA's spec and its status are two writes, and the
// webhook's informer may hold the first alone for a moment: a pod admitted
// then is patched from the spec only.
func (e *env) admittedPod(t *testing.T, deployment string, seen func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		p, err := e.c.DryRunPod(e.ns, deployment)
		if err != nil {
			return false, err
		}
		if err := seen(p); err != nil {
			return false, err
		}
		got = p
		return true, nil
	})
	return got
}

// requestsMatch tells whether container "app" of pod requests exactly want.
func requestsMatch(pod *corev1.Pod, want corev1.ResourceList) error {
	return containerRequests(pod, "app", want)
}

// containerRequests tells whether container name of pod (a regular or an
// init container) requests want (each resource want names, exactly).
func containerRequests(pod *corev1.Pod, name string, want corev1.ResourceList) error {
	for _, c := range append(slices.Clone(pod.Spec.Containers), pod.Spec.InitContainers...) {
		if c.Name != name {
			continue
		}
		for k, w := range want {
			if g, ok := c.Resources.Requests[k]; !ok || g.Cmp(w) != 0 {
				return fmt.Errorf("pod %s: container %s requests %v, want %v", pod.Name, name, c.Resources.Requests, want)
			}
		}
		return nil
	}
	return fmt.Errorf("pod %s has no container %s", pod.Name, name)
}

func TestRecreateRollsDeploymentWithinPDB(t *testing.T) {
	e := setup(t)
	const app = "web"
	want := framework.Resources("200m", "200Mi")
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: app, Replicas: 4, Containers: lowRequests()})
	one := intstr.FromInt32(1)
	_, err := e.c.Client.PolicyV1().PodDisruptionBudgets(e.ns).Create(context.Background(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original := uids(e.c.WaitForPods(t, e.ns, "app="+app, 4, framework.PodReady))
	// The PDB controller must have computed the budget before evictions.
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		pdb, err := e.c.Client.PolicyV1().PodDisruptionBudgets(e.ns).Get(context.Background(), app, metav1.GetOptions{})
		return err == nil && pdb.Status.DisruptionsAllowed == 1, err
	})
	e.createVPA(t, app, vpav1.UpdateModeRecreate, "200m", "200Mi")
	// The admission controller gives recreated pods the recommendation and
	// renews the status Lease the updater requires.
	ac := e.runAdmissionController(t)
	e.waitAdmitted(t, app, want)
	p := e.runUpdater(t)

	// Every original pod gets evicted and replaced by one with the
	// recommended requests; at no observed moment are more than one of the
	// four replicas unavailable.
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		ready, remaining, recommended := 0, 0, 0
		for _, pod := range e.pods(t, app) {
			if pod.DeletionTimestamp == nil && framework.PodReady(&pod) {
				ready++
				if !original[pod.UID] && requestsMatch(&pod, want) == nil {
					recommended++
				}
			}
			if original[pod.UID] {
				remaining++
			}
		}
		if ready < 3 {
			t.Fatalf("only %d of 4 pods ready: the PDB allows one unavailable\n%s", ready, p.Log())
		}
		if remaining > 0 || recommended < 4 {
			return false, fmt.Errorf("%d original pods left, %d ready pods with the recommendation", remaining, recommended)
		}
		return true, nil
	})
	for _, pod := range e.pods(t, app) {
		if err := requestsMatch(&pod, want); err != nil {
			t.Errorf("%v\nadmission controller log:\n%s", err, ac.Log())
		}
	}
	e.waitForEvents(t, map[string]int{"EvictedByVPA": 4, "EvictedPod": 4})
}

func TestSingleReplicaNeedsMinReplicasOne(t *testing.T) {
	e := setup(t)
	e.keepLeaseFresh(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "default", Containers: lowRequests()})
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "allowed", Containers: lowRequests()})
	defaults := uids(e.c.WaitForPods(t, e.ns, "app=default", 1, framework.PodReady))
	allowed := uids(e.c.WaitForPods(t, e.ns, "app=allowed", 1, framework.PodReady))
	e.createVPA(t, "default", vpav1.UpdateModeRecreate, "200m", "200Mi")
	e.createVPA(t, "allowed", vpav1.UpdateModeRecreate, "200m", "200Mi", withMinReplicas(1))
	p := e.runUpdater(t)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		for _, pod := range e.pods(t, "allowed") {
			if allowed[pod.UID] {
				return false, nil
			}
		}
		return true, nil
	})
	// The updater acts on the other VPA, so it does see this one.
	e.assertNoEviction(t, "default", defaults, p, 3)
}

func TestModesOffAndInitialAreNeverActedOn(t *testing.T) {
	e := setup(t)
	e.keepLeaseFresh(t)
	for _, m := range []vpav1.UpdateMode{vpav1.UpdateModeOff, vpav1.UpdateModeInitial} {
		name := strings.ToLower(string(m))
		e.c.CreateDeployment(t, e.ns, framework.Workload{Name: name, Replicas: 2, Containers: lowRequests()})
		e.createVPA(t, name, m, "200m", "200Mi")
	}
	// A Recreate VPA in the same namespace shows the updater is working.
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "recreate", Replicas: 2, Containers: lowRequests()})
	e.createVPA(t, "recreate", vpav1.UpdateModeRecreate, "200m", "200Mi")
	off := uids(e.c.WaitForPods(t, e.ns, "app=off", 2, framework.PodReady))
	initial := uids(e.c.WaitForPods(t, e.ns, "app=initial", 2, framework.PodReady))
	recreate := uids(e.c.WaitForPods(t, e.ns, "app=recreate", 2, framework.PodReady))
	p := e.runUpdater(t)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		for _, pod := range e.pods(t, "recreate") {
			if recreate[pod.UID] {
				return false, nil
			}
		}
		return true, nil
	})
	e.assertNoEviction(t, "off", off, p, 3)
	e.assertNoEviction(t, "initial", initial, p, 0)
}

func TestNothingEvictedWhileLeaseIsStale(t *testing.T) {
	e := setup(t)
	// A Lease counts as valid for the timeout after its creation as well as
	// after its last renewal, so a Lease created now with a back-dated
	// renewTime is stale only once the timeout has passed since its
	// creation. A short timeout keeps that wait short; keepLeaseFresh renews
	// well within it.
	const timeout = 10 * time.Second
	e.writeLease(t, true)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Replicas: 2, Containers: lowRequests()})
	original := uids(e.c.WaitForPods(t, e.ns, "app=web", 2, framework.PodReady))
	e.createVPA(t, "web", vpav1.UpdateModeRecreate, "200m", "200Mi")
	framework.WaitFor(t, 2*timeout, func() (bool, error) {
		l, err := e.c.Client.CoordinationV1().Leases(e.ns).Get(context.Background(), leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !status.IsFresh(l, timeout, time.Now()), nil
	})
	p := e.runUpdater(t, fmt.Sprintf("--admission-controller-status-lease-timeout=%s", timeout))
	e.assertNoEviction(t, "web", original, p, 5)
	// Once the Lease is fresh the same pods are evicted.
	e.keepLeaseFresh(t)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		for _, pod := range e.pods(t, "web") {
			if original[pod.UID] {
				return false, nil
			}
		}
		return true, nil
	})
}

func TestEvictionRequirementBlocksDownscale(t *testing.T) {
	e := setup(t)
	e.keepLeaseFresh(t)
	high := []framework.Container{{Name: "app", Requests: framework.Resources("1", "1Gi")}}
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "blocked", Replicas: 2, Containers: high})
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "free", Replicas: 2, Containers: high})
	blocked := uids(e.c.WaitForPods(t, e.ns, "app=blocked", 2, framework.PodReady))
	free := uids(e.c.WaitForPods(t, e.ns, "app=free", 2, framework.PodReady))
	e.createVPA(t, "blocked", vpav1.UpdateModeRecreate, "100m", "100Mi",
		withRequirement(vpav1.TargetHigherThanRequests, corev1.ResourceCPU, corev1.ResourceMemory))
	e.createVPA(t, "free", vpav1.UpdateModeRecreate, "100m", "100Mi")
	p := e.runUpdater(t)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		for _, pod := range e.pods(t, "free") {
			if free[pod.UID] {
				return false, nil
			}
		}
		return true, nil
	})
	e.assertNoEviction(t, "blocked", blocked, p, 3)
}

func TestInPlaceResizeKeepsUID(t *testing.T) {
	e := setup(t)
	e.keepLeaseFresh(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Replicas: 2, Containers: lowRequests()})
	original := uids(e.c.WaitForPods(t, e.ns, "app=web", 2, framework.PodReady))
	e.createVPA(t, "web", vpav1.UpdateModeInPlace, "200m", "200Mi")
	p := e.runUpdater(t)
	want := framework.Resources("200m", "200Mi")
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		pods := e.pods(t, "web")
		done := 0
		for _, pod := range pods {
			if !original[pod.UID] {
				t.Fatalf("pod %s is new: InPlace must never evict\n%s", pod.Name, p.Log())
			}
			for _, st := range pod.Status.ContainerStatuses {
				if st.Resources != nil && st.Resources.Requests.Cpu().Cmp(want[corev1.ResourceCPU]) == 0 &&
					st.Resources.Requests.Memory().Cmp(want[corev1.ResourceMemory]) == 0 {
					done++
				}
			}
		}
		if done < 2 {
			return false, fmt.Errorf("%d of 2 pods resized", done)
		}
		return true, nil
	})
	e.waitForEvents(t, map[string]int{"InPlaceResizedByVPA": 2})
}

func TestInPlaceOrRecreateFallsBackToEvictionWhenInfeasible(t *testing.T) {
	e := setup(t)
	e.keepLeaseFresh(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Replicas: 2, Containers: lowRequests(),
		Annotations: map[string]string{framework.AnnotationResize: framework.ResizeInfeasible}})
	original := uids(e.c.WaitForPods(t, e.ns, "app=web", 2, framework.PodReady))
	e.createVPA(t, "web", vpav1.UpdateModeInPlaceOrRecreate, "200m", "200Mi")
	e.runUpdater(t)
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		for _, pod := range e.pods(t, "web") {
			if original[pod.UID] {
				return false, nil
			}
		}
		return true, nil
	})
	// An in-place attempt first, then the evictions.
	e.waitForEvents(t, map[string]int{"InPlaceResizedByVPA": 1, "EvictedByVPA": 2})
}

func TestRestartedUpdaterDoesNotRepeatInfeasibleResize(t *testing.T) {
	e := setup(t)
	e.keepLeaseFresh(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Replicas: 2, Containers: lowRequests(),
		Annotations: map[string]string{framework.AnnotationResize: framework.ResizeInfeasible}})
	original := uids(e.c.WaitForPods(t, e.ns, "app=web", 2, framework.PodReady))
	e.createVPA(t, "web", vpav1.UpdateModeInPlace, "200m", "200Mi")
	p := e.runUpdater(t)
	// Both pods get one resize attempt, reported infeasible and recorded.
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		marked := 0
		for _, pod := range e.pods(t, "web") {
			if rec, ok := inplace.Read(&pod); ok && rec.Infeasible {
				marked++
			}
		}
		if marked < 2 {
			return false, fmt.Errorf("%d of 2 pods recorded infeasible", marked)
		}
		return true, nil
	})
	// The first updater's own attempts post their events asynchronously:
	// wait for both before counting, then stop it.
	e.waitForEvents(t, map[string]int{"InPlaceResizedByVPA": 2})
	p.Stop(t)
	before := e.eventReasons(t, nil)

	// The restarted updater runs loops of its own (counted in its own log)
	// and skips both pods in them, without a resize or an eviction.
	p2 := e.runUpdater(t)
	e.assertNoEviction(t, "web", original, p2, 3)
	e.waitForEvents(t, map[string]int{"InPlaceResizeSkipped": before["InPlaceResizeSkipped"] + 2})
	if n := strings.Count(p2.Log(), "Resized pod in place"); n > 0 {
		t.Fatalf("the restarted updater resized again (%d times)\n%s", n, p2.Log())
	}
	if after := e.eventReasons(t, nil)["InPlaceResizedByVPA"]; after != before["InPlaceResizedByVPA"] {
		t.Fatalf("%d resize events, %d before the restart\n%s", after, before["InPlaceResizedByVPA"], p2.Log())
	}
}

// TestInPlaceResizeFitsPodLimitRange: under a Pod LimitRange the updater
// resizes every container so the pod fits (upstream's numbers, 200m/512Mi
// each), so the API server's LimitRange admission of pods/resize accepts it.
// Resizing only the recommended container to its target would be refused.
// Later loops plan from the original resources recorded on the pod and leave
// it alone; planning from its resized values would scale the containers
// again, every loop.
func TestInPlaceResizeFitsPodLimitRange(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.keepLeaseFresh(t)
	small, big := framework.Resources("100m", "100Mi"), framework.Resources("400m", "600Mi")
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "hamster", Replicas: 2, Containers: []framework.Container{
		{Name: "app", Requests: small, Limits: small}, {Name: "side", Requests: big, Limits: big},
	}})
	original := uids(e.c.WaitForPods(t, e.ns, "app=hamster", 2, framework.PodReady))
	// The LimitRange comes after the pods (500m of cpu limits), as to a
	// namespace with running workloads; a resize must satisfy it.
	_, err := e.c.Client.CoreV1().LimitRanges(e.ns).Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-max"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypePod, Max: framework.Resources("400m", "1Gi")},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.createVPA(t, "hamster", vpav1.UpdateModeInPlaceOrRecreate, "400m", "600Mi")
	p := e.runUpdater(t)
	want := framework.Resources("200m", "512Mi")
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		done := 0
		for _, pod := range e.pods(t, "hamster") {
			if !original[pod.UID] {
				t.Fatalf("pod %s is new: the resize should have been accepted\n%s", pod.Name, p.Log())
			}
			ok := 0
			for _, st := range pod.Status.ContainerStatuses {
				if st.Resources != nil && st.Resources.Requests.Cpu().Cmp(want[corev1.ResourceCPU]) == 0 &&
					st.Resources.Requests.Memory().Cmp(want[corev1.ResourceMemory]) == 0 &&
					st.Resources.Limits.Cpu().Cmp(want[corev1.ResourceCPU]) == 0 {
					ok++
				}
			}
			if ok == 2 {
				done++
			}
		}
		if done < 2 {
			return false, fmt.Errorf("%d of 2 pods resized to %v in both containers", done, want)
		}
		return true, nil
	})
	loops := strings.Count(p.Log(), loopDone)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		return strings.Count(p.Log(), loopDone) >= loops+3, nil
	})
	if n := strings.Count(p.Log(), "Resized pod in place"); n != 2 {
		t.Errorf("%d resizes, want one per pod\n%s", n, p.Log())
	}
	if r := e.waitForEvents(t, map[string]int{"InPlaceResizedByVPA": 2}); r["InPlaceResizedByVPA"] != 2 || r["EvictedByVPA"] > 0 {
		t.Errorf("events %v, want 2 InPlaceResizedByVPA and no eviction", r)
	}
}

// TestRecommendationTheAPIServerRefusesIsNotActedOn: when no capping can
// give a pod the API server admits (here the containers would request more
// than the pod-level resources), the updater neither evicts nor resizes and
// says why in an event on the VPA.
func TestRecommendationTheAPIServerRefusesIsNotActedOn(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.keepLeaseFresh(t)
	w := framework.Workload{Name: "web", Replicas: 2, Containers: lowRequests()}
	d := w.Deployment(e.ns)
	d.Spec.Template.Spec.Resources = &corev1.ResourceRequirements{Requests: framework.Resources("100m", "100Mi")}
	if _, err := e.c.Client.AppsV1().Deployments(e.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	original := uids(e.c.WaitForPods(t, e.ns, "app=web", 2, framework.PodReady))
	e.createVPA(t, "web", vpav1.UpdateModeRecreate, "200m", "80Mi")
	p := e.runUpdater(t)
	e.assertNoEviction(t, "web", original, p, 3)
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		evs, err := e.c.Client.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=VerticalPodAutoscaler,reason=LimitRangeConflict"})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		if msg := evs.Items[0].Message; !strings.Contains(msg, "must be greater than or equal to aggregate container requests of 200m") {
			t.Fatalf("event message %q does not say why", msg)
		}
		return true, nil
	})
}
