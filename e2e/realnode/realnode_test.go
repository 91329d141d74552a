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
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/e2e/framework"
)

// workload is a memhog Deployment on the real node.
func workload(ns, name string, args []string, requests, limits corev1.ResourceList) *appsv1.Deployment {
	return framework.MemhogOnRealNode(ns, name, args, requests, limits)
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

// waitEveryReplicaServes waits until each admission controller replica, asked directly at its
// pod address, gives a new pod of the Deployment the VPA's current target, and returns that
// target. The replicas answer from VPA informers, which receive a status write a moment after
// the API server stores it: a pod created within that moment is admitted without the
// recommendation, as eventual consistency allows. Asking through the Service would reach one
// replica at random, so each is asked at its own address.
// env is the shipped install, with the checks of this package.
type env struct{ *framework.Shipped }

func (e *env) waitEveryReplicaServes(t *testing.T, ns, deployment string) corev1.ResourceList {
	t.Helper()
	ctx := context.Background()
	secret, err := e.C.Client.CoreV1().Secrets(framework.ShippedNamespace).Get(ctx, "vpa-tls-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["caCert.pem"]) {
		t.Fatal("vpa-tls-certs has no CA certificate")
	}
	client := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "vpa-webhook." + framework.ShippedNamespace + ".svc", MinVersion: tls.VersionTLS12},
	}}
	var want corev1.ResourceList
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		want = e.Target(t, ns, deployment, time.Minute, nil)
		pod, err := framework.NewPodOf(ctx, e.C.Client, ns, deployment)
		if err != nil {
			return false, err
		}
		replicas := e.Pods(t, framework.ShippedNamespace, "app=vpa-admission-controller")
		if len(replicas) != 2 {
			return false, fmt.Errorf("%d admission controller pods", len(replicas))
		}
		for _, r := range replicas {
			got, err := review(&client, fmt.Sprintf("https://%s:8000/", r.Status.PodIP), pod)
			if err != nil {
				return false, fmt.Errorf("%s: %w", r.Name, err)
			}
			if req := got.Spec.Containers[0].Resources.Requests; !framework.SameRequests(req, want) {
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
	e := &env{framework.InstallShipped(t)}
	installed := time.Now()
	before := e.Restarts(t)
	// A workload whose history the recommender keeps for the whole test, in checkpoints.
	steady := e.C.NewNamespace(t)
	e.CreateWorkload(t, workload(steady, "steady", []string{"--memory=20Mi", "--cpu=20m"},
		framework.Resources("20m", "20Mi"), nil), vpav1.UpdateModeOff)

	// The scenarios that wait on the components' loops run at once.
	t.Run("workloads", func(t *testing.T) {
		t.Run("the webhook behind its Service sets the recommended requests", func(t *testing.T) {
			t.Parallel()
			ns := e.C.NewNamespace(t)
			e.CreateWorkload(t, workload(ns, "web", []string{"--memory=40Mi", "--cpu=100m"},
				framework.Resources("10m", "10Mi"), nil), vpav1.UpdateModeInitial)
			e.Target(t, ns, "web", 4*framework.ShippedLoopInterval, nil)
			before := e.waitEveryReplicaServes(t, ns, "web")
			old := e.Pods(t, ns, "app=web")
			for _, p := range old {
				if err := e.C.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
				for _, p := range e.Pods(t, ns, "app=web") {
					if p.UID == old[0].UID || !framework.PodRunning(&p) {
						continue
					}
					// The target in force when the pod was created: the one read before
					// the deletion, or a newer one the recommender wrote since.
					req := p.Spec.Containers[0].Resources.Requests
					after := e.Target(t, ns, "web", time.Minute, nil)
					if !framework.SameRequests(req, before) && !framework.SameRequests(req, after) {
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
			ns := e.C.NewNamespace(t)
			// Over its limit at start: the kernel kills it.
			e.CreateWorkload(t, workload(ns, "hog", []string{"--memory=400Mi"},
				framework.Resources("50m", "300Mi"), framework.Resources("", "350Mi")), vpav1.UpdateModeRecreate)
			var first corev1.Pod
			framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
				for _, p := range e.Pods(t, ns, "app=hog") {
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
			e.Target(t, ns, "hog", 4*framework.ShippedLoopInterval, func(r corev1.ResourceList) bool {
				m := r[corev1.ResourceMemory]
				return m.Cmp(mi(400)) >= 0
			})
			// The quick-OOM rule: the updater evicts the pod, the webhook gives the
			// replacement the raised request (and limit, in proportion), and it runs.
			framework.WaitFor(t, 4*framework.ShippedLoopInterval, func() (bool, error) {
				for _, p := range e.Pods(t, ns, "app=hog") {
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
				ns := e.C.NewNamespace(t)
				// Below the pod minimums (25m, 250Mi): under the lower bound at once.
				e.CreateWorkload(t, workload(ns, "resize", []string{"--memory=30Mi", "--cpu=100m"},
					framework.Resources("10m", "20Mi"), framework.Resources("100m", "100Mi")), mode)
				var original corev1.Pod
				framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
					pods := e.Pods(t, ns, "app=resize")
					if len(pods) != 1 || !framework.PodRunning(&pods[0]) {
						return false, nil
					}
					original = pods[0]
					return true, nil
				})
				var p *corev1.Pod
				framework.WaitFor(t, 5*framework.ShippedLoopInterval, func() (bool, error) {
					var err error
					p, err = e.C.Client.CoreV1().Pods(ns).Get(context.Background(), original.Name, metav1.GetOptions{})
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
					return mem.Cmp(mi(250)) >= 0 && framework.SameRequests(st.Requests, spec.Requests) && framework.SameRequests(st.Limits, spec.Limits), nil
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
		framework.WaitFor(t, 11*framework.ShippedLoopInterval, func() (bool, error) {
			if now := e.Restarts(t); fmt.Sprint(now) != fmt.Sprint(before) {
				t.Fatalf("restarts %v, at install %v", now, before)
			}
			return time.Since(installed) >= 10*framework.ShippedLoopInterval, nil
		})
		for _, name := range framework.ShippedComponents {
			e.WaitRolledOut(t, name, 10*time.Second)
		}
	})

	t.Run("deleting the leader hands the Lease over and loses no history", func(t *testing.T) {
		e.DeleteLeader(t, "vpa-updater")
		e.WaitRolledOut(t, "vpa-updater", 2*time.Minute)

		// A deleted recommender writes every checkpoint as it goes; the next leader
		// restores them, adds its own samples, and writes them all when it goes in turn.
		deleted := e.DeleteLeader(t, "vpa-recommender-lease")
		var first int
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			n, at := e.CheckpointSamples(t, steady, "steady")
			first = n
			if n == 0 || at.Before(deleted.Truncate(time.Second)) {
				return false, fmt.Errorf("%d samples, written %v", n, at)
			}
			return true, nil
		})
		e.WaitRolledOut(t, "vpa-recommender", 2*time.Minute)
		// At least one loop of the new leader, read from its own metrics.
		framework.WaitFor(t, 3*framework.ShippedLoopInterval, func() (bool, error) {
			n, err := e.LeaderMetric("vpa-recommender-lease", 8942, `vpa_recommender_execution_latency_seconds_count{step="total"}`)
			return err == nil && n >= 1, err
		})
		deleted = e.DeleteLeader(t, "vpa-recommender-lease")
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			n, at := e.CheckpointSamples(t, steady, "steady")
			if at.Before(deleted.Truncate(time.Second)) {
				return false, fmt.Errorf("not written since the second deletion (%d samples, %v)", n, at)
			}
			if n <= first {
				t.Fatalf("the second leader wrote %d samples, the first %d: it did not continue the history", n, first)
			}
			return true, nil
		})
		e.WaitRolledOut(t, "vpa-recommender", 2*time.Minute)
	})

	t.Run("kubectl rollout restart completes", func(t *testing.T) {
		for _, name := range framework.ShippedComponents {
			e.C.Kubectl(t, "rollout", "restart", "-n", framework.ShippedNamespace, "deployment/"+name)
			e.C.Kubectl(t, "rollout", "status", "-n", framework.ShippedNamespace, "deployment/"+name, "--timeout=110s")
			e.WaitRolledOut(t, name, time.Minute)
		}
	})
}
