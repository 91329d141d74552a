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

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
)

const (
	// ShippedNamespace is where deploy/ installs the components.
	ShippedNamespace = "kube-system"
	// ShippedLoopInterval is the recommender's and the updater's --*-interval in deploy/ (the default).
	ShippedLoopInterval = time.Minute
	// ShippedLeaseDuration is --leader-elect-lease-duration in deploy/ (the default).
	ShippedLeaseDuration = 15 * time.Second
)

// ShippedComponents are the Deployments of deploy/.
var ShippedComponents = []string{"vpa-recommender", "vpa-updater", "vpa-admission-controller"}

// Shipped is deploy/ installed with the local overlay on the real node.
type Shipped struct {
	C    *Cluster
	VPAs vpaclient.Interface
}

// InstallShipped imports the images, creates the webhook's certificate with deploy/certs and applies
// deploy/overlays/local, then waits until every Deployment has two ready replicas. Cleanup
// removes it all, the webhook configuration and the Leases included.
func InstallShipped(t *testing.T) *Shipped {
	c := Start(t)
	vpas, err := vpaclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &Shipped{C: c, VPAs: vpas}
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
	t.Cleanup(func() { e.Uninstall(t) })
	if _, err := c.Client.CoreV1().Secrets(ShippedNamespace).Get(context.Background(), "vpa-tls-certs", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		run(filepath.Join(c.RepoRoot, "deploy/certs/self-signed/gencerts.sh"))
	}
	c.Kubectl(t, "apply", "-k", filepath.Join(c.RepoRoot, "deploy/overlays/local"))
	for _, name := range ShippedComponents {
		e.WaitRolledOut(t, name, 3*time.Minute)
	}
	return e
}

// Uninstall deletes deploy/overlays/local and what the components made at run time.
func (e *Shipped) Uninstall(t *testing.T) {
	ctx := context.Background()
	if t.Failed() {
		for _, name := range ShippedComponents {
			out, _ := e.C.KubectlE("logs", "-n", ShippedNamespace, "deployment/"+name, "--all-containers", "--tail=60")
			t.Logf("logs of %s:\n%s", name, out)
		}
		// Whether the API server reached the webhook: a call that failed is admitted unpatched
		// (failurePolicy Ignore) and leaves only this line behind.
		if b, err := os.ReadFile(filepath.Join(e.C.Dir, "logs", "kube-apiserver.log")); err == nil {
			var calls []string
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "vpa.k8s.io") || strings.Contains(line, "vpa-webhook") {
					calls = append(calls, line)
				}
			}
			t.Logf("the API server's last %d lines about the webhook:\n%s", min(len(calls), 20), strings.Join(calls[max(len(calls)-20, 0):], "\n"))
		}
	}
	if out, err := e.C.KubectlE("delete", "-k", filepath.Join(e.C.RepoRoot, "deploy/overlays/local"), "--ignore-not-found", "--wait=true", "--timeout=90s"); err != nil {
		t.Logf("removing deploy/: %v\n%s", err, out)
	}
	_ = e.C.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "vpa-webhook-config", metav1.DeleteOptions{})
	_ = e.C.Client.CoreV1().Secrets(ShippedNamespace).Delete(ctx, "vpa-tls-certs", metav1.DeleteOptions{})
	for _, l := range []string{"vpa-recommender-lease", "vpa-updater", "vpa-admission-controller"} {
		_ = e.C.Client.CoordinationV1().Leases(ShippedNamespace).Delete(ctx, l, metav1.DeleteOptions{})
	}
}

// WaitRolledOut waits until the Deployment's current generation has two updated, ready and
// available replicas and no old ones, all on the real node.
func (e *Shipped) WaitRolledOut(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, func() (bool, error) {
		d, err := e.C.Client.AppsV1().Deployments(ShippedNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != 2 || s.ReadyReplicas != 2 || s.AvailableReplicas != 2 || s.Replicas != 2 {
			return false, fmt.Errorf("%s: %d replicas, %d updated, %d ready, %d available", name, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas)
		}
		pods := e.Pods(t, ShippedNamespace, "app="+name)
		for _, p := range pods {
			if p.Spec.NodeName != RealNodeName || p.DeletionTimestamp != nil {
				return false, fmt.Errorf("%s: pod %s on %q (deleting %v)", name, p.Name, p.Spec.NodeName, p.DeletionTimestamp != nil)
			}
		}
		return len(pods) == 2, nil
	})
}

// Pods lists the pods of ns that match selector.
func (e *Shipped) Pods(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	l, err := e.C.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// Restarts sums the restart counts of the ShippedComponents' containers, by pod.
func (e *Shipped) Restarts(t *testing.T) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, name := range ShippedComponents {
		for _, p := range e.Pods(t, ShippedNamespace, "app="+name) {
			for _, s := range p.Status.ContainerStatuses {
				out[p.Name] += s.RestartCount
			}
		}
	}
	return out
}

// CreateWorkload creates the Deployment and its VPA. The VPA allows updates of a single
// replica (minReplicas 1; --min-replicas is 2).
func (e *Shipped) CreateWorkload(t *testing.T, d *appsv1.Deployment, mode vpav1.UpdateMode) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.C.Client.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vpa := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode, MinReplicas: ptr.To[int32](1)},
		},
	}
	if _, err := e.VPAs.AutoscalingV1().VerticalPodAutoscalers(d.Namespace).Create(ctx, vpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Target waits for the VPA's target for container hog and returns it.
func (e *Shipped) Target(t *testing.T, ns, name string, timeout time.Duration, ok func(corev1.ResourceList) bool) corev1.ResourceList {
	t.Helper()
	var got corev1.ResourceList
	WaitFor(t, timeout, func() (bool, error) {
		v, err := e.VPAs.AutoscalingV1().VerticalPodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
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

// SameRequests compares the CPU and memory of two resource lists.
func SameRequests(a, b corev1.ResourceList) bool {
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		x, y := a[r], b[r]
		if x.Cmp(y) != 0 {
			return false
		}
	}
	return true
}

// CheckpointSamples returns the largest sample count of the VPA's checkpoints and when the last
// of them was written.
func (e *Shipped) CheckpointSamples(t *testing.T, ns, vpa string) (int, time.Time) {
	t.Helper()
	l, err := e.VPAs.AutoscalingV1().VerticalPodAutoscalerCheckpoints(ns).List(context.Background(), metav1.ListOptions{})
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

// DeleteLeader deletes the pod holding the Lease and waits until another candidate holds it,
// within the lease duration and one loop interval.
func (e *Shipped) DeleteLeader(t *testing.T, lease string) time.Time {
	t.Helper()
	ctx := context.Background()
	l, err := e.C.Client.CoordinationV1().Leases(ShippedNamespace).Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	pod, _, _ := strings.Cut(holder, "_")
	if err := e.C.Client.CoreV1().Pods(ShippedNamespace).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the leader %s of %s: %v", pod, lease, err)
	}
	deleted := time.Now()
	WaitFor(t, ShippedLeaseDuration+ShippedLoopInterval, func() (bool, error) {
		l, err := e.C.Client.CoordinationV1().Leases(ShippedNamespace).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != holder, nil
	})
	t.Logf("%s handed over %v after its leader's pod %s was deleted", lease, time.Since(deleted).Round(100*time.Millisecond), pod)
	return deleted
}

// LeaderMetric reads one series (name and labels, as exposed) from the metrics of the pod that
// holds the Lease; the host reaches pod addresses through the real node's veth.
func (e *Shipped) LeaderMetric(lease string, port int, series string) (float64, error) {
	ctx := context.Background()
	l, err := e.C.Client.CoordinationV1().Leases(ShippedNamespace).Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	name, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
	pod, err := e.C.Client.CoreV1().Pods(ShippedNamespace).Get(ctx, name, metav1.GetOptions{})
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
