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

// Package realnode tests OpenVPA as a user installs it: deploy/ with the local overlay
// (deploy/overlays/local, images from make images) on the local cluster's real node, a kubelet
// with containerd and runc (hack/cluster/node.sh). The API server reaches the webhook through its
// Service, the kernel does the OOM kills, and resizes change real cgroups.
//
// The components run as shipped, for every namespace, so they would act on the other e2e
// packages' VPAs: hack/test.sh runs this package alone, after the others.
package realnode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
)

const (
	system = "kube-system"
	// loopInterval is the recommender's and the updater's --*-interval in deploy/ (the default).
	loopInterval = time.Minute
	// leaseDuration is --leader-elect-lease-duration in deploy/ (the default).
	leaseDuration = 15 * time.Second
)

var components = []string{"vpa-recommender", "vpa-updater", "vpa-admission-controller"}

type env struct {
	c    *framework.Cluster
	vpas vpaclient.Interface
}

// install imports the images, creates the webhook's certificate with deploy/certs and applies
// deploy/overlays/local, then waits until every Deployment has two ready replicas. Cleanup
// removes it all, the webhook configuration and the Leases included.
func install(t *testing.T) *env {
	c := framework.Start(t)
	vpas, err := vpaclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{c: c, vpas: vpas}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = c.RepoRoot
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.KubeconfigPath, "KUBECTL="+c.KubectlPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	// The images of this tree's code, imported into the node's containerd.
	run("make", "images")
	t.Cleanup(func() { e.uninstall(t) })
	if _, err := c.Client.CoreV1().Secrets(system).Get(context.Background(), "vpa-tls-certs", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		run(filepath.Join(c.RepoRoot, "deploy/certs/self-signed/gencerts.sh"))
	}
	c.Kubectl(t, "apply", "-k", filepath.Join(c.RepoRoot, "deploy/overlays/local"))
	for _, name := range components {
		e.waitRolledOut(t, name, 3*time.Minute)
	}
	return e
}

func (e *env) uninstall(t *testing.T) {
	ctx := context.Background()
	if t.Failed() {
		for _, name := range components {
			out, _ := e.c.KubectlE("logs", "-n", system, "deployment/"+name, "--all-containers", "--tail=60")
			t.Logf("logs of %s:\n%s", name, out)
		}
		// Whether the API server reached the webhook: a call that failed is admitted unpatched
		// (failurePolicy Ignore) and leaves only this line behind.
		if b, err := os.ReadFile(filepath.Join(e.c.Dir, "logs", "kube-apiserver.log")); err == nil {
			var calls []string
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "vpa.k8s.io") || strings.Contains(line, "vpa-webhook") {
					calls = append(calls, line)
				}
			}
			t.Logf("the API server's last %d lines about the webhook:\n%s", min(len(calls), 20), strings.Join(calls[max(len(calls)-20, 0):], "\n"))
		}
	}
	if out, err := e.c.KubectlE("delete", "-k", filepath.Join(e.c.RepoRoot, "deploy/overlays/local"), "--ignore-not-found", "--wait=true", "--timeout=90s"); err != nil {
		t.Logf("removing deploy/: %v\n%s", err, out)
	}
	_ = e.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "vpa-webhook-config", metav1.DeleteOptions{})
	_ = e.c.Client.CoreV1().Secrets(system).Delete(ctx, "vpa-tls-certs", metav1.DeleteOptions{})
	for _, l := range []string{"vpa-recommender-lease", "vpa-updater", "vpa-admission-controller"} {
		_ = e.c.Client.CoordinationV1().Leases(system).Delete(ctx, l, metav1.DeleteOptions{})
	}
}

// waitRolledOut waits until the Deployment's current generation has two updated, ready and
// available replicas and no old ones, all on the real node.
func (e *env) waitRolledOut(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	framework.WaitFor(t, timeout, func() (bool, error) {
		d, err := e.c.Client.AppsV1().Deployments(system).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != 2 || s.ReadyReplicas != 2 || s.AvailableReplicas != 2 || s.Replicas != 2 {
			return false, fmt.Errorf("%s: %d replicas, %d updated, %d ready, %d available", name, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas)
		}
		pods := e.pods(t, system, "app="+name)
		for _, p := range pods {
			if p.Spec.NodeName != framework.RealNodeName || p.DeletionTimestamp != nil {
				return false, fmt.Errorf("%s: pod %s on %q (deleting %v)", name, p.Name, p.Spec.NodeName, p.DeletionTimestamp != nil)
			}
		}
		return len(pods) == 2, nil
	})
}

func (e *env) pods(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	l, err := e.c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// restarts sums the restart counts of the components' containers, by pod.
func (e *env) restarts(t *testing.T) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, name := range components {
		for _, p := range e.pods(t, system, "app="+name) {
			for _, s := range p.Status.ContainerStatuses {
				out[p.Name] += s.RestartCount
			}
		}
	}
	return out
}

// workload is a memhog Deployment on the real node.
func workload(ns, name string, args []string, requests, limits corev1.ResourceList) *appsv1.Deployment {
	return framework.MemhogOnRealNode(ns, name, args, requests, limits)
}

// createWorkload creates the Deployment and its VPA. The VPA allows updates of a single
// replica (minReplicas 1; --min-replicas is 2).
func (e *env) createWorkload(t *testing.T, d *appsv1.Deployment, mode vpav1.UpdateMode) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.c.Client.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vpa := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode, MinReplicas: ptr.To[int32](1)},
		},
	}
	if _, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(d.Namespace).Create(ctx, vpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// target waits for the VPA's target for container hog and returns it.
func (e *env) target(t *testing.T, ns, name string, timeout time.Duration, ok func(corev1.ResourceList) bool) corev1.ResourceList {
	t.Helper()
	var got corev1.ResourceList
	framework.WaitFor(t, timeout, func() (bool, error) {
		v, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if v.Status.Recommendation == nil || len(v.Status.Recommendation.ContainerRecommendations) == 0 {
			return false, fmt.Errorf("no recommendation yet")
		}
		got = v.Status.Recommendation.ContainerRecommendations[0].Target
		if ok != nil && !ok(got) {
			return false, fmt.Errorf("target %v", got)
		}
		return true, nil
	})
	return got
}

// sameRequests compares the CPU and memory of two resource lists.
func sameRequests(a, b corev1.ResourceList) bool {
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		x, y := a[r], b[r]
		if x.Cmp(y) != 0 {
			return false
		}
	}
	return true
}

func mi(n int64) resource.Quantity { return *resource.NewQuantity(n*1024*1024, resource.BinarySI) }

// cgroupValue reads a cgroup v1 file of the container from the node's cgroups.
func cgroupValue(t *testing.T, controller, containerID, file string) int64 {
	t.Helper()
	id := containerID[strings.Index(containerID, "://")+3:]
	var dir string
	root := filepath.Join("/sys/fs/cgroup", controller)
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // a cgroup removed while walking
		}
		if d.IsDir() && strings.Contains(filepath.Base(path), id) {
			dir = path
			return filepath.SkipAll
		}
		return nil
	})
	if dir == "" {
		t.Fatalf("no %s cgroup of container %s", controller, id)
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkpointSamples returns the largest sample count of the VPA's checkpoints and when the last
// of them was written.
func (e *env) checkpointSamples(t *testing.T, ns, vpa string) (int, time.Time) {
	t.Helper()
	l, err := e.vpas.AutoscalingV1().VerticalPodAutoscalerCheckpoints(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, last := 0, time.Time{}
	for _, cp := range l.Items {
		if cp.Spec.VPAObjectName != vpa {
			continue
		}
		n = max(n, cp.Status.TotalSamplesCount)
		if cp.Status.LastUpdateTime.After(last) {
			last = cp.Status.LastUpdateTime.Time
		}
	}
	return n, last
}

// deleteLeader deletes the pod holding the Lease and waits until another candidate holds it,
// within the lease duration and one loop interval.
func (e *env) deleteLeader(t *testing.T, lease string) time.Time {
	t.Helper()
	ctx := context.Background()
	l, err := e.c.Client.CoordinationV1().Leases(system).Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	pod, _, _ := strings.Cut(holder, "_")
	if err := e.c.Client.CoreV1().Pods(system).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the leader %s of %s: %v", pod, lease, err)
	}
	deleted := time.Now()
	framework.WaitFor(t, leaseDuration+loopInterval, func() (bool, error) {
		l, err := e.c.Client.CoordinationV1().Leases(system).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != holder, nil
	})
	t.Logf("%s handed over %v after its leader's pod %s was deleted", lease, time.Since(deleted).Round(100*time.Millisecond), pod)
	return deleted
}

// leaderLoops reads a loop counter from the metrics of the pod that holds the Lease; the host
// reaches pod addresses through the real node's veth.
func (e *env) leaderLoops(lease string, port int, series string) (float64, error) {
	ctx := context.Background()
	l, err := e.c.Client.CoordinationV1().Leases(system).Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	name, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
	pod, err := e.c.Client.CoreV1().Pods(system).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d/metrics", pod.Status.PodIP, port))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s yet", name, series)
}

// waitEveryReplicaServes waits until each admission controller replica, asked directly at its
// pod address, gives a new pod of the Deployment the VPA's current target, and returns that
// target. The replicas answer from VPA informers, which receive a status write a moment after
// the API server stores it: a pod created within that moment is admitted without the
// recommendation, as eventual consistency allows. Asking through the Service would reach one
// replica at random, so each is asked at its own address.
func (e *env) waitEveryReplicaServes(t *testing.T, ns, deployment string) corev1.ResourceList {
	t.Helper()
	ctx := context.Background()
	secret, err := e.c.Client.CoreV1().Secrets(system).Get(ctx, "vpa-tls-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["caCert.pem"]) {
		t.Fatal("vpa-tls-certs has no CA certificate")
	}
	client := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "vpa-webhook." + system + ".svc", MinVersion: tls.VersionTLS12},
	}}
	var want corev1.ResourceList
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		want = e.target(t, ns, deployment, time.Minute, nil)
		pod, err := framework.NewPodOf(ctx, e.c.Client, ns, deployment)
		if err != nil {
			return false, err
		}
		replicas := e.pods(t, system, "app=vpa-admission-controller")
		if len(replicas) != 2 {
			return false, fmt.Errorf("%d admission controller pods", len(replicas))
		}
		for _, r := range replicas {
			got, err := review(&client, fmt.Sprintf("https://%s:8000/", r.Status.PodIP), pod)
			if err != nil {
				return false, fmt.Errorf("%s: %w", r.Name, err)
			}
			if req := got.Spec.Containers[0].Resources.Requests; !sameRequests(req, want) {
				return false, fmt.Errorf("%s gives requests %v, the target is %v", r.Name, req, want)
			}
		}
		return true, nil
	})
	return want
}

// review sends the webhook at url a review of pod's creation and returns the pod with the
// response's patch applied.
func review(client *http.Client, url string, pod *corev1.Pod) (*corev1.Pod, error) {
	resp, err := framework.ReviewPodCreation(client, url, fmt.Sprintf("realnode-%d", time.Now().UnixNano()), pod)
	if err != nil {
		return nil, err
	}
	if !resp.Allowed {
		return nil, fmt.Errorf("not allowed: %+v", resp.Result)
	}
	raw, err := json.Marshal(pod)
	if err != nil || len(resp.Patch) == 0 {
		return pod, err
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return nil, err
	}
	if raw, err = patch.Apply(raw); err != nil {
		return nil, err
	}
	var got corev1.Pod
	return &got, json.Unmarshal(raw, &got)
}

func TestDeployOnTheRealNode(t *testing.T) {
	e := install(t)
	installed := time.Now()
	before := e.restarts(t)
	// A workload whose history the recommender keeps for the whole test, in checkpoints.
	steady := e.c.NewNamespace(t)
	e.createWorkload(t, workload(steady, "steady", []string{"--memory=20Mi", "--cpu=20m"},
		framework.Resources("20m", "20Mi"), nil), vpav1.UpdateModeOff)

	// The scenarios that wait on the components' loops run at once.
	t.Run("workloads", func(t *testing.T) {
		t.Run("the webhook behind its Service sets the recommended requests", func(t *testing.T) {
			t.Parallel()
			ns := e.c.NewNamespace(t)
			e.createWorkload(t, workload(ns, "web", []string{"--memory=40Mi", "--cpu=100m"},
				framework.Resources("10m", "10Mi"), nil), vpav1.UpdateModeInitial)
			e.target(t, ns, "web", 4*loopInterval, nil)
			before := e.waitEveryReplicaServes(t, ns, "web")
			old := e.pods(t, ns, "app=web")
			for _, p := range old {
				if err := e.c.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
				for _, p := range e.pods(t, ns, "app=web") {
					if p.UID == old[0].UID || !framework.PodRunning(&p) {
						continue
					}
					// The target in force when the pod was created: the one read before
					// the deletion, or a newer one the recommender wrote since.
					req := p.Spec.Containers[0].Resources.Requests
					after := e.target(t, ns, "web", time.Minute, nil)
					if !sameRequests(req, before) && !sameRequests(req, after) {
						return false, fmt.Errorf("new pod %s requests %v, want the target %v or %v (annotations %v)", p.Name, req, before, after, p.Annotations)
					}
					if p.Annotations["vpaUpdates"] == "" {
						return false, fmt.Errorf("new pod %s has no vpaUpdates annotation", p.Name)
					}
					return true, nil
				}
				return false, nil
			})
		})

		t.Run("a real OOM kill raises memory and the updater replaces the pod", func(t *testing.T) {
			t.Parallel()
			ns := e.c.NewNamespace(t)
			// Over its limit at start: the kernel kills it.
			e.createWorkload(t, workload(ns, "hog", []string{"--memory=400Mi"},
				framework.Resources("50m", "300Mi"), framework.Resources("", "350Mi")), vpav1.UpdateModeRecreate)
			var first corev1.Pod
			framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
				for _, p := range e.pods(t, ns, "app=hog") {
					for _, s := range p.Status.ContainerStatuses {
						if term := s.LastTerminationState.Terminated; term != nil && term.Reason == "OOMKilled" {
							first = p
							return true, nil
						}
					}
				}
				return false, nil
			})
			// Upstream's bump: max(300Mi × 1.2, 300Mi + 100Mi) = 400Mi, then the margin.
			e.target(t, ns, "hog", 4*loopInterval, func(r corev1.ResourceList) bool {
				m := r[corev1.ResourceMemory]
				return m.Cmp(mi(400)) >= 0
			})
			// The quick-OOM rule: the updater evicts the pod, the webhook gives the
			// replacement the raised request (and limit, in proportion), and it runs.
			framework.WaitFor(t, 4*loopInterval, func() (bool, error) {
				for _, p := range e.pods(t, ns, "app=hog") {
					if p.UID == first.UID || !framework.PodRunning(&p) || len(p.Status.ContainerStatuses) == 0 {
						continue
					}
					req := p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
					if req.Cmp(mi(400)) < 0 {
						return false, fmt.Errorf("replacement %s requests %s", p.Name, req.String())
					}
					s := p.Status.ContainerStatuses[0]
					if s.RestartCount != 0 || s.State.Running == nil {
						return false, fmt.Errorf("replacement %s: %d restarts, state %+v", p.Name, s.RestartCount, s.State)
					}
					started := s.State.Running.StartedAt.Time
					// Running, not killed, for 20 s after it started.
					return time.Since(started) > 20*time.Second, nil
				}
				return false, nil
			})
		})

		for _, mode := range []vpav1.UpdateMode{vpav1.UpdateModeInPlaceOrRecreate, vpav1.UpdateModeInPlace} {
			t.Run("an in-place resize changes the running container/"+string(mode), func(t *testing.T) {
				t.Parallel()
				ns := e.c.NewNamespace(t)
				// Below the pod minimums (25m, 250Mi): under the lower bound at once.
				e.createWorkload(t, workload(ns, "resize", []string{"--memory=30Mi", "--cpu=100m"},
					framework.Resources("10m", "20Mi"), framework.Resources("100m", "100Mi")), mode)
				var original corev1.Pod
				framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
					pods := e.pods(t, ns, "app=resize")
					if len(pods) != 1 || !framework.PodRunning(&pods[0]) {
						return false, nil
					}
					original = pods[0]
					return true, nil
				})
				var p *corev1.Pod
				framework.WaitFor(t, 5*loopInterval, func() (bool, error) {
					var err error
					p, err = e.c.Client.CoreV1().Pods(ns).Get(context.Background(), original.Name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].Resources == nil {
						return false, nil
					}
					// Resized and settled: the status reports what the spec asks for.
					st := p.Status.ContainerStatuses[0].Resources
					mem := st.Requests[corev1.ResourceMemory]
					spec := p.Spec.Containers[0].Resources
					for _, c := range p.Status.Conditions {
						if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
							return false, fmt.Errorf("resize condition %s: %s", c.Type, c.Message)
						}
					}
					return mem.Cmp(mi(250)) >= 0 && sameRequests(st.Requests, spec.Requests) && sameRequests(st.Limits, spec.Limits), nil
				})
				s := p.Status.ContainerStatuses[0]
				if p.UID != original.UID || s.RestartCount != 0 {
					t.Fatalf("the pod was replaced or restarted (uid %s→%s, %d restarts), want an in-place resize", original.UID, p.UID, s.RestartCount)
				}
				spec := p.Spec.Containers[0].Resources
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					if got, want := s.Resources.Requests[r], spec.Requests[r]; got.Cmp(want) != 0 {
						t.Errorf("status requests %s %s, spec %s", r, got.String(), want.String())
					}
					if got, want := s.Resources.Limits[r], spec.Limits[r]; got.Cmp(want) != 0 {
						t.Errorf("status limits %s %s, spec %s", r, got.String(), want.String())
					}
				}
				memLimit := s.Resources.Limits[corev1.ResourceMemory]
				if got := cgroupValue(t, "memory", s.ContainerID, "memory.limit_in_bytes"); got != memLimit.Value() {
					t.Errorf("memory.limit_in_bytes %d, pod status limit %d", got, memLimit.Value())
				}
				cpuLimit := s.Resources.Limits[corev1.ResourceCPU]
				if got, want := cgroupValue(t, "cpu", s.ContainerID, "cpu.cfs_quota_us"), cpuLimit.MilliValue()*100; got != want {
					t.Errorf("cpu.cfs_quota_us %d, want %d for the pod status limit %s", got, want, cpuLimit.String())
				}
				t.Logf("resized in place: requests cpu %s memory %s, limits cpu %s memory %s",
					s.Resources.Requests.Cpu(), s.Resources.Requests.Memory(), s.Resources.Limits.Cpu(), s.Resources.Limits.Memory())
			})
		}
	})

	t.Run("no component restarted over 10 loop intervals", func(t *testing.T) {
		framework.WaitFor(t, 11*loopInterval, func() (bool, error) {
			if now := e.restarts(t); fmt.Sprint(now) != fmt.Sprint(before) {
				t.Fatalf("restarts %v, at install %v", now, before)
			}
			return time.Since(installed) >= 10*loopInterval, nil
		})
		for _, name := range components {
			e.waitRolledOut(t, name, 10*time.Second)
		}
	})

	t.Run("deleting the leader hands the Lease over and loses no history", func(t *testing.T) {
		e.deleteLeader(t, "vpa-updater")
		e.waitRolledOut(t, "vpa-updater", 2*time.Minute)

		// A deleted recommender writes every checkpoint as it goes; the next leader
		// restores them, adds its own samples, and writes them all when it goes in turn.
		deleted := e.deleteLeader(t, "vpa-recommender-lease")
		var first int
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			n, at := e.checkpointSamples(t, steady, "steady")
			first = n
			if n == 0 || at.Before(deleted.Truncate(time.Second)) {
				return false, fmt.Errorf("%d samples, written %v", n, at)
			}
			return true, nil
		})
		e.waitRolledOut(t, "vpa-recommender", 2*time.Minute)
		// At least one loop of the new leader, read from its own metrics.
		framework.WaitFor(t, 3*loopInterval, func() (bool, error) {
			n, err := e.leaderLoops("vpa-recommender-lease", 8942, `vpa_recommender_execution_latency_seconds_count{step="total"}`)
			return err == nil && n >= 1, err
		})
		deleted = e.deleteLeader(t, "vpa-recommender-lease")
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			n, at := e.checkpointSamples(t, steady, "steady")
			if at.Before(deleted.Truncate(time.Second)) {
				return false, fmt.Errorf("not written since the second deletion (%d samples, %v)", n, at)
			}
			if n <= first {
				t.Fatalf("the second leader wrote %d samples, the first %d: it did not continue the history", n, first)
			}
			return true, nil
		})
		e.waitRolledOut(t, "vpa-recommender", 2*time.Minute)
	})

	t.Run("kubectl rollout restart completes", func(t *testing.T) {
		for _, name := range components {
			e.c.Kubectl(t, "rollout", "restart", "-n", system, "deployment/"+name)
			e.c.Kubectl(t, "rollout", "status", "-n", system, "deployment/"+name, "--timeout=110s")
			e.waitRolledOut(t, name, time.Minute)
		}
	})
}
