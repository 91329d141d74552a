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

// Package admission runs the admission controller binary against the local
// control plane as the vpa-admission-controller ServiceAccount, registered by
// URL to https://127.0.0.1:<port> under a per-test webhook configuration name
// and scoped to the test's namespace.
package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/openvpa/openvpa/admission-controller/webhook"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/leases"
	"github.com/openvpa/openvpa/pkg/status"
)

const leaseName = "vpa-admission-controller"

var applyOnce sync.Once

type env struct {
	c       *framework.Cluster
	vpas    vpaclient.Interface
	ns      string
	certDir string
	port    int
	health  string
	config  string
	proc    *framework.Process
	binary  string
	args    []string
}

// setup applies the CRDs and RBAC, generates certificates and starts the
// admission controller scoped to a fresh namespace.
func setup(t *testing.T) *env {
	c := framework.Start(t)
	applyOnce.Do(func() {
		c.InstallCRDs(t)
		c.ApplyRBAC(t, "admission-controller")
	})
	vpas, err := vpaclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{c: c, vpas: vpas, ns: c.NewNamespace(t), certDir: t.TempDir(), port: framework.FreePort(t), binary: c.BuildBinary(t, "./admission-controller")}
	if err := webhook.GenerateSelfSigned(e.certDir, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	e.config = "vpa-webhook-" + e.ns
	c.AllowWebhookConfig(t, e.config)
	t.Cleanup(func() {
		_ = c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), e.config, metav1.DeleteOptions{})
	})
	healthPort := framework.FreePort(t)
	e.health = fmt.Sprintf("http://127.0.0.1:%d", healthPort)
	e.args = []string{
		"--port=" + strconv.Itoa(e.port),
		fmt.Sprintf("--address=127.0.0.1:%d", healthPort),
		"--register-by-url", "--webhook-address=https://127.0.0.1", "--webhook-port=" + strconv.Itoa(e.port),
		"--webhook-config-name=" + e.config,
		"--webhook-timeout-seconds=5",
		"--vpa-object-namespace=" + e.ns,
		"--client-ca-file=" + filepath.Join(e.certDir, webhook.CACertFile),
		"--tls-cert-file=" + filepath.Join(e.certDir, webhook.ServerCertFile),
		"--tls-private-key=" + filepath.Join(e.certDir, webhook.ServerKeyFile),
		"--reload-cert",
		"--status-lease-namespace=" + e.ns,
		"--status-lease-update-interval=1s",
		"--v=4",
	}
	e.start(t)
	return e
}

func (e *env) start(t *testing.T) {
	t.Helper()
	e.proc = e.c.RunComponent(t, framework.Component{
		Name:           "vpa-admission-controller",
		Binary:         e.binary,
		Args:           e.args,
		ServiceAccount: "kube-system/vpa-admission-controller",
		Env:            []string{"NAMESPACE=kube-system"},
	})
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		if exited, err := e.proc.Exited(); exited {
			return false, fmt.Errorf("admission controller exited: %v", err)
		}
		resp, err := http.Get(e.health + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, nil
		}
		_, err = e.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), e.config, metav1.GetOptions{})
		return err == nil, nil
	})
}

func rl(cpu, mem string) corev1.ResourceList { return framework.Resources(cpu, mem) }

// leases returns a Lease client as admin.
func (e *env) leases(t *testing.T) leases.Client {
	t.Helper()
	c, err := leases.New(e.c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createVPA creates a VPA for Deployment name and stores a recommendation in
// its status, as the recommender would.
func (e *env) createVPA(t *testing.T, name string, mode vpav1.UpdateMode, policy *vpav1.PodResourcePolicy, target corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:      &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			UpdatePolicy:   &vpav1.PodUpdatePolicy{UpdateMode: &mode},
			ResourcePolicy: policy,
		},
	}
	created, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(ctx, v, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
		{ContainerName: "app", Target: target, LowerBound: target, UpperBound: target, UncappedTarget: target},
	}}
	if _, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(e.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPatched waits until a dry-run pod of the deployment carries the
// vpaUpdates annotation (the admission controller's caches have caught up).
func (e *env) waitPatched(t *testing.T, deployment string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		p, err := e.c.DryRunPod(e.ns, deployment)
		if err != nil {
			return false, nil
		}
		got = p
		return p.Annotations[annotations.Updates] != "", nil
	})
	return got
}

// recreatePods deletes the deployment's pods and returns the next one created.
func (e *env) recreatePods(t *testing.T, deployment string) corev1.Pod {
	t.Helper()
	ctx := context.Background()
	old, err := e.c.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + deployment})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range old.Items {
		seen[p.Name] = true
		if err := e.c.Client.CoreV1().Pods(e.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	var fresh corev1.Pod
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		pods, err := e.c.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + deployment})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if !seen[p.Name] && p.DeletionTimestamp == nil {
				fresh = p
				return true, nil
			}
		}
		return false, nil
	})
	return fresh
}

func assertResources(t *testing.T, what string, got corev1.ResourceList, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
		return
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g.Cmp(w) != 0 {
			t.Errorf("%s[%s] = %v, want %s", what, k, got[k], w.String())
		}
	}
}

func deployment(name string, req, lim corev1.ResourceList) framework.Workload {
	return framework.Workload{Name: name, Replicas: 1, Containers: []framework.Container{{Name: "app", Requests: req, Limits: lim}}}
}

func TestAdmissionController(t *testing.T) {
	e := setup(t)
	ctx := context.Background()

	t.Run("Initial mode applies the recommendation with proportional limits", func(t *testing.T) {
		e.c.CreateDeployment(t, e.ns, deployment("web", rl("100m", "100Mi"), rl("200m", "150Mi")))
		e.createVPA(t, "web", vpav1.UpdateModeInitial, nil, rl("250m", "200Mi"))
		e.waitPatched(t, "web")
		p := e.recreatePods(t, "web")
		c := p.Spec.Containers[0]
		assertResources(t, "requests", c.Resources.Requests, rl("250m", "200Mi"))
		assertResources(t, "limits", c.Resources.Limits, rl("500m", "300Mi"))
		if got := p.Annotations[annotations.ObservedContainers]; got != "app" {
			t.Errorf("%s = %q", annotations.ObservedContainers, got)
		}
		orig, ok, err := annotations.OriginalOf(&p)
		if err != nil || !ok {
			t.Fatalf("original resources annotation: %v %v", ok, err)
		}
		assertResources(t, "original requests", orig["app"].Requests, rl("100m", "100Mi"))
	})

	t.Run("RequestsOnly keeps limits", func(t *testing.T) {
		e.c.CreateDeployment(t, e.ns, deployment("ro", rl("100m", "100Mi"), rl("1", "1Gi")))
		e.createVPA(t, "ro", vpav1.UpdateModeRecreate, &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{
			{ContainerName: "*", ControlledValues: ptr.To(vpav1.ContainerControlledValuesRequestsOnly)},
		}}, rl("300m", "256Mi"))
		e.waitPatched(t, "ro")
		p := e.recreatePods(t, "ro")
		c := p.Spec.Containers[0]
		assertResources(t, "requests", c.Resources.Requests, rl("300m", "256Mi"))
		assertResources(t, "limits", c.Resources.Limits, rl("1", "1Gi"))
	})

	t.Run("invalid VPA is denied with the field at fault", func(t *testing.T) {
		bad := &vpav1.VerticalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: e.ns},
			Spec: vpav1.VerticalPodAutoscalerSpec{
				TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				ResourcePolicy: &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{
					ContainerName: "app",
					MinAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
					MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
				}}},
			},
		}
		_, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(ctx, bad, metav1.CreateOptions{})
		if err == nil {
			t.Fatal("invalid VPA was created")
		}
		msg := err.Error()
		if !strings.Contains(msg, "admission webhook") || !strings.Contains(msg, "denied the request") ||
			!strings.Contains(msg, "spec.resourcePolicy.containerPolicies[0].maxAllowed[cpu]") {
			t.Errorf("error %q does not name the webhook denial and the field", msg)
		}
	})

	t.Run("the status Lease is fresh while running", func(t *testing.T) {
		r := status.NewReader(e.leases(t), e.ns, leaseName, 5*time.Second, clock.RealClock{})
		framework.WaitFor(t, 30*time.Second, func() (bool, error) { return r.IsFresh(ctx) })
	})

	t.Run("rotated certificate files are picked up without a restart", func(t *testing.T) {
		if err := webhook.GenerateSelfSigned(e.certDir, []string{"127.0.0.1"}, time.Hour); err != nil {
			t.Fatal(err)
		}
		ca, err := os.ReadFile(filepath.Join(e.certDir, webhook.CACertFile))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", e.port), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
			if err != nil {
				return false, nil
			}
			conn.Close()
			cfg, err := e.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, e.config, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return string(cfg.Webhooks[0].ClientConfig.CABundle) == string(ca), nil
		})
		if exited, _ := e.proc.Exited(); exited {
			t.Fatal("the admission controller restarted")
		}
		// The API server trusts the new CA and pods are still patched.
		e.waitPatched(t, "web")
	})

	t.Run("with the admission controller stopped pods are created and the Lease goes stale", func(t *testing.T) {
		e.proc.Stop(t)
		p := e.recreatePods(t, "web")
		if _, ok := p.Annotations[annotations.Updates]; ok {
			t.Errorf("pod %s was patched with the admission controller stopped", p.Name)
		}
		assertResources(t, "requests", p.Spec.Containers[0].Resources.Requests, rl("100m", "100Mi"))
		r := status.NewReader(e.leases(t), e.ns, leaseName, 5*time.Second, clock.RealClock{})
		framework.WaitFor(t, 30*time.Second, func() (bool, error) {
			fresh, err := r.IsFresh(ctx)
			if err != nil {
				return false, err
			}
			return !fresh, nil
		})
	})
}
