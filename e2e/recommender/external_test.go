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

package recommender

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	externalv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"

	"github.com/openvpa/openvpa/admission-controller/webhook"
	"github.com/openvpa/openvpa/e2e/framework"
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

const externalAPIService = "v1beta1.external.metrics.k8s.io"

// externalAdapter is a small external metrics adapter: for every pod of its
// namespace it serves one series per container (native sidecars included) and metric, labelled as
// upstream's recommender expects (the pod's labels, pod=<name>,
// name=<container>), with the value given for the metric, filtered by the
// request's label selector.
type externalAdapter struct {
	c      *framework.Cluster
	ns     string
	values map[string]string // metric -> value
}

func (a *externalAdapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const prefix = "/apis/external.metrics.k8s.io/v1beta1"
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == prefix {
		resources := []metav1.APIResource{}
		for m := range a.values {
			resources = append(resources, metav1.APIResource{Name: m, Namespaced: true, Kind: "ExternalMetricValueList", Verbs: []string{"get"}})
		}
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "external.metrics.k8s.io/v1beta1", APIResources: resources})
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, prefix+"/"), "/")
	if len(parts) != 3 || parts[0] != "namespaces" || parts[1] != a.ns {
		http.NotFound(w, r)
		return
	}
	value, ok := a.values[parts[2]]
	if !ok {
		http.NotFound(w, r)
		return
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pods, err := a.c.Client.CoreV1().Pods(a.ns).List(r.Context(), metav1.ListOptions{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	list := externalv1beta1.ExternalMetricValueList{TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: "external.metrics.k8s.io/v1beta1"}}
	for _, p := range pods.Items {
		containers := p.Spec.Containers
		for _, c := range p.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				containers = append(containers, c) // native sidecars run, and are measured
			}
		}
		for _, c := range containers {
			l := labels.Set{"pod": p.Name, "name": c.Name}
			for k, v := range p.Labels {
				l[k] = v
			}
			if sel.Matches(l) {
				list.Items = append(list.Items, externalv1beta1.ExternalMetricValue{MetricName: parts[2], MetricLabels: l,
					Timestamp: metav1.Now(), Value: resource.MustParse(value)})
			}
		}
	}
	_ = json.NewEncoder(w).Encode(list)
}

// serveExternalMetrics starts the adapter on loopback with TLS and registers
// it as the external.metrics.k8s.io APIService, behind an ExternalName
// Service as the local cluster registers metrics-server; both go when the
// test ends. It returns once the APIService is Available.
func (e *env) serveExternalMetrics(t *testing.T, values map[string]string) {
	t.Helper()
	ctx := context.Background()
	const svc = "external-metrics"
	dir := t.TempDir()
	if err := webhook.GenerateSelfSigned(dir, []string{svc + "." + e.ns + ".svc", "127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, webhook.ServerCertFile), filepath.Join(dir, webhook.ServerKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, webhook.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &externalAdapter{c: e.c, ns: e.ns, values: values}, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	if _, err := e.c.Client.CoreV1().Services(e.ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": externalAPIService},
		"spec": map[string]any{
			"group": "external.metrics.k8s.io", "version": "v1beta1",
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"caBundle": base64.StdEncoding.EncodeToString(ca),
			"service":  map[string]any{"name": svc, "namespace": e.ns, "port": int64(port)},
		},
	}}
	if _, err := e.c.Dynamic.Resource(apiServices).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeExternalAPIService(t, e.c) })
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		got, err := e.c.Dynamic.Resource(apiServices).Get(ctx, externalAPIService, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Available" {
				if m["status"] == "True" {
					return true, nil
				}
				return false, fmt.Errorf("APIService not available: %v", m["message"])
			}
		}
		return false, errors.New("APIService has no Available condition yet")
	})
}

// removeExternalAPIService deletes the APIService and waits until discovery
// no longer serves the group.
func removeExternalAPIService(t *testing.T, c *framework.Cluster) {
	t.Helper()
	ctx := context.Background()
	if err := c.Dynamic.Resource(apiServices).Delete(ctx, externalAPIService, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		_, err := c.Client.Discovery().ServerResourcesForGroupVersion("external.metrics.k8s.io/v1beta1")
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("external.metrics.k8s.io/v1beta1 still served: %v", err)
	})
}

var externalFlags = []string{"--use-external-metrics", "--external-metrics-cpu-metric=cpu_usage", "--external-metrics-memory-metric=memory_usage"}

// TestExternalMetricsAPI covers --use-external-metrics: without the external
// metrics API the recommender stops at start and says why; with an adapter
// registered, recommendations come from the adapter's values (KWOK, and so
// metrics-server, report 1m of CPU for these pods, which would recommend the
// 12m pod-minimum share instead).
func TestExternalMetricsAPI(t *testing.T) {
	e := setup(t)
	removeExternalAPIService(t, e.c)

	p := e.run(t, append([]string{"--vpa-object-namespace=" + e.ns}, externalFlags...)...)
	if err := p.Wait(t, time.Minute); err == nil {
		t.Fatalf("the recommender started without the external metrics API\n%s", p.Log())
	}
	if log := p.Log(); !strings.Contains(log, "does not serve the external metrics API external.metrics.k8s.io/v1beta1") {
		t.Fatalf("the recommender's error does not name the missing API:\n%s", log)
	}

	e.serveExternalMetrics(t, map[string]string{"cpu_usage": "250m", "memory_usage": "300Mi"})
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "ext", Replicas: 2,
		Containers: []framework.Container{{Name: "app", Requests: framework.Resources("100m", "100Mi")}, {Name: "side", Requests: framework.Resources("10m", "10Mi")}}})
	e.c.WaitForPods(t, e.ns, "app=ext", 2, framework.PodRunning)
	e.createVPA(t, e.ns, "ext", "apps/v1", "Deployment", "ext")
	rec := e.run(t, append([]string{"--vpa-object-namespace=" + e.ns}, externalFlags...)...)
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		if exited, err := rec.Exited(); exited {
			t.Fatalf("recommender exited: %v\n%s", err, rec.Log())
		}
		v, err := e.getVPA(e.ns, "ext")
		if err != nil {
			return false, err
		}
		for _, c := range []string{"app", "side"} {
			r := recommendation(v, c)
			if r == nil {
				return false, fmt.Errorf("no recommendation for %s yet", c)
			}
			// 250m steady: P90 is the upper edge of its bucket, 258m, plus
			// the 15% margin; 300Mi: 330.7 MB plus 15%.
			cpu, mem := r.Target[corev1.ResourceCPU], r.Target[corev1.ResourceMemory]
			if cpu.Cmp(resource.MustParse("250m")) < 0 || cpu.Cmp(resource.MustParse("320m")) > 0 {
				return false, fmt.Errorf("%s cpu target %s, want about 297m from the adapter's 250m", c, cpu.String())
			}
			if mem.Cmp(resource.MustParse("300Mi")) < 0 || mem.Cmp(resource.MustParse("400Mi")) > 0 {
				return false, fmt.Errorf("%s memory target %s, want about 363Mi from the adapter's 300Mi", c, mem.String())
			}
		}
		return true, nil
	})
}

// TestNativeSidecarUsageIsRecorded feeds a native sidecar's usage to the
// recommender (through the external metrics API, since KWOK serves no usage
// for init containers) and checks that with NativeSidecar the sidecar gets
// a recommendation from it, and that without the gate it gets none while
// the container does.
func TestNativeSidecarUsageIsRecorded(t *testing.T) {
	e := setup(t)
	removeExternalAPIService(t, e.c)
	e.serveExternalMetrics(t, map[string]string{"cpu_usage": "250m", "memory_usage": "300Mi"})
	for _, gate := range []bool{false, true} {
		name := "plain"
		args := append([]string{"--vpa-object-namespace=" + e.ns}, externalFlags...)
		if gate {
			name = "sidecar"
			args = append(args, "--feature-gates=NativeSidecar=true")
		}
		w := framework.Workload{Name: name, Containers: []framework.Container{{Name: "app", Requests: framework.Resources("100m", "100Mi")}}}
		d := w.Deployment(e.ns)
		always := corev1.ContainerRestartPolicyAlways
		d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: framework.DefaultImage, RestartPolicy: &always}}
		if _, err := e.c.Client.AppsV1().Deployments(e.ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.c.WaitForPods(t, e.ns, "app="+name, 1, framework.PodRunning)
		e.createVPA(t, e.ns, name, "apps/v1", "Deployment", name)
		rec := e.run(t, args...)
		framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
			v, err := e.getVPA(e.ns, name)
			if err != nil {
				return false, err
			}
			app, proxy := recommendation(v, "app"), recommendation(v, "proxy")
			if app == nil {
				return false, fmt.Errorf("no recommendation for app yet")
			}
			if !gate {
				if proxy != nil {
					t.Fatalf("without NativeSidecar the sidecar got a recommendation: %+v\n%s", proxy, rec.Log())
				}
				return true, nil
			}
			if proxy == nil {
				return false, fmt.Errorf("no recommendation for the sidecar yet")
			}
			if cpu := proxy.Target[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("250m")) < 0 || cpu.Cmp(resource.MustParse("320m")) > 0 {
				return false, fmt.Errorf("sidecar cpu target %s, want about 297m from its 250m", cpu.String())
			}
			return true, nil
		})
		rec.Stop(t)
	}
}
