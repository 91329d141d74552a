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

package input

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	externalv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
)

// fakeAdapter serves external metrics for the pods of namespace ns: series
// labelled with the pod's labels, pod=<name> and name=<container>,
// filtered by the request's label selector as an adapter does.
type fakeAdapter struct {
	at     time.Time
	series map[string][]externalv1beta1.ExternalMetricValue // by metric
	seen   []string
}

func (f *fakeAdapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const prefix = "/apis/external.metrics.k8s.io/v1beta1"
	if r.URL.Path == prefix {
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{GroupVersion: "external.metrics.k8s.io/v1beta1"})
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, prefix+"/"), "/")
	if len(parts) != 3 || parts[0] != "namespaces" {
		http.NotFound(w, r)
		return
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.seen = append(f.seen, parts[2]+"?"+sel.String())
	list := externalv1beta1.ExternalMetricValueList{}
	for _, s := range f.series[parts[2]] {
		if sel.Matches(labels.Set(s.MetricLabels)) {
			s.Timestamp = metav1.NewTime(f.at)
			list.Items = append(list.Items, s)
		}
	}
	_ = json.NewEncoder(w).Encode(list)
}

func series(metric, pod, container, value string) externalv1beta1.ExternalMetricValue {
	l := map[string]string{"app": "web", "pod": pod}
	if container != "" {
		l["name"] = container
	}
	return externalv1beta1.ExternalMetricValue{MetricName: metric, MetricLabels: l, Value: resource.MustParse(value)}
}

func TestExternalMetricsUsage(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeAdapter{at: at, series: map[string][]externalv1beta1.ExternalMetricValue{
		"cpu_usage": {series("cpu_usage", "web-1", "app", "250m"), series("cpu_usage", "web-1", "proxy", "20m"),
			series("cpu_usage", "web-2", "app", "1"), series("cpu_usage", "web-1", "", "5")},
		"memory_usage": {series("memory_usage", "web-1", "app", "100Mi")},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ext, err := NewExternalMetrics(&rest.Config{Host: srv.URL}, ExternalOptions{
		Metrics:            map[corev1.ResourceName]string{corev1.ResourceCPU: "cpu_usage", corev1.ResourceMemory: "memory_usage"},
		ContainerNameLabel: "name",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ext.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	ext.Pods = func() []PodQuery {
		return []PodQuery{{Pod: types.NamespacedName{Namespace: "ns", Name: "web-1"}, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}}
	}
	got, err := ext.Usage(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ContainerUsage{
		{Pod: types.NamespacedName{Namespace: "ns", Name: "web-1"}, Container: "app", Time: at, CPU: 250, Memory: 100 << 20},
		{Pod: types.NamespacedName{Namespace: "ns", Name: "web-1"}, Container: "proxy", Time: at, CPU: 20, Memory: -1},
	}
	sameUsage(t, got, want)
	if want := "cpu_usage?app=web,pod=web-1"; len(f.seen) == 0 || f.seen[0] != want {
		t.Errorf("queries %v, want the VPA's selector and the pod first: %s", f.seen, want)
	}
}

func TestExternalMetricsCheckNamesTheMissingAPI(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ext, err := NewExternalMetrics(&rest.Config{Host: srv.URL}, ExternalOptions{Metrics: map[corev1.ResourceName]string{corev1.ResourceCPU: "c"}, ContainerNameLabel: "name"})
	if err != nil {
		t.Fatal(err)
	}
	err = ext.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "does not serve the external metrics API external.metrics.k8s.io/v1beta1") {
		t.Errorf("Check = %v", err)
	}
	if _, err := NewExternalMetrics(&rest.Config{Host: srv.URL}, ExternalOptions{}); err == nil {
		t.Error("a source without metrics was built")
	}
}
