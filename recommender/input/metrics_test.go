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
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"

	"github.com/openvpa/openvpa/pkg/kubeclient/kubeclienttest"
	"github.com/openvpa/openvpa/pkg/testbuild"
	"github.com/openvpa/openvpa/recommender/model"
)

func newPodMetrics(ns, name string, at time.Time, usage ...corev1.ResourceList) metricsv1beta1.PodMetrics {
	pm := metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name, "pod-template-hash": "5d8f"},
			CreationTimestamp: metav1.NewTime(at.Add(time.Second))},
		Timestamp: metav1.NewTime(at),
		Window:    metav1.Duration{Duration: 15 * time.Second},
	}
	for i, u := range usage {
		pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: []string{"app", "proxy", "log"}[i], Usage: u})
	}
	return pm
}

// typedUsage is what the typed client's List gives for the same list: the
// samples the streamed decode must reproduce.
func typedUsage(t testing.TB, l *metricsv1beta1.PodMetricsList) []ContainerUsage {
	t.Helper()
	var out []ContainerUsage
	for _, pm := range l.Items {
		for _, c := range pm.Containers {
			u := ContainerUsage{Pod: types.NamespacedName{Namespace: pm.Namespace, Name: pm.Name}, Container: c.Name,
				Time: pm.Timestamp.Time, CPU: -1, Memory: -1}
			if q, ok := c.Usage[corev1.ResourceCPU]; ok {
				u.CPU = model.ResourceAmount(q.MilliValue())
			}
			if q, ok := c.Usage[corev1.ResourceMemory]; ok {
				u.Memory = model.ResourceAmount(q.Value())
			}
			out = append(out, u)
		}
	}
	return out
}

func sameUsage(t *testing.T, got, want []ContainerUsage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d samples %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		g := got[i]
		if !g.Time.Equal(want[i].Time) {
			t.Errorf("sample %d time %v, want %v", i, g.Time, want[i].Time)
		}
		g.Time = want[i].Time
		if g != want[i] {
			t.Errorf("sample %d = %+v, want %+v", i, g, want[i])
		}
	}
}

func TestMetricsServerStreamsTheListAndKeepsOnlyTrackedPods(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	list := &metricsv1beta1.PodMetricsList{
		TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: "metrics.k8s.io/v1beta1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "7"},
		Items: []metricsv1beta1.PodMetrics{
			newPodMetrics("a", "web-1", at, testbuild.Resources("250m", "100Mi"), testbuild.Resources("1500u", "")),
			newPodMetrics("b", "db-0", at.Add(-time.Minute), testbuild.Resources("2", "3Gi")),
			newPodMetrics("a", "web-2", at, testbuild.Resources("", "64Ki"), testbuild.Resources("1", "1k"), testbuild.Resources("0", "0")),
			newPodMetrics("c", "idle", at), // no containers
		},
	}
	srv := kubeclienttest.NewServer(t, runtime.NewScheme(), 0, list)
	client, err := metricsclient.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	typed, err := client.PodMetricses("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := typedUsage(t, typed)
	if len(all) != 6 {
		t.Fatalf("the fixture has %d samples, want 6", len(all))
	}
	for _, tc := range []struct {
		name      string
		namespace string
		keep      func(types.NamespacedName) bool
		want      []ContainerUsage
		path      string
	}{
		{name: "every pod", want: all, path: "/apis/metrics.k8s.io/v1beta1/pods"},
		{name: "one namespace's path", namespace: "a", want: all, path: "/apis/metrics.k8s.io/v1beta1/namespaces/a/pods"},
		{name: "tracked pods only", keep: func(p types.NamespacedName) bool { return p.Namespace == "a" },
			want: []ContainerUsage{all[0], all[1], all[3], all[4], all[5]}, path: "/apis/metrics.k8s.io/v1beta1/pods"},
		{name: "none tracked", keep: func(types.NamespacedName) bool { return false }, path: "/apis/metrics.k8s.io/v1beta1/pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(srv.Requests())
			got, err := NewMetricsServer(client, tc.namespace).Usage(context.Background(), tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			sameUsage(t, got, tc.want)
			reqs := srv.Requests()[n:]
			if len(reqs) != 1 || reqs[0].Method != http.MethodGet || reqs[0].Path != tc.path {
				t.Errorf("requests %+v, want one GET %s", reqs, tc.path)
			}
		})
	}
}

func TestMetricsServerErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		reply  any
		want   string
	}{
		{name: "unavailable", status: http.StatusServiceUnavailable,
			reply: metav1.Status{Status: metav1.StatusFailure, Message: "the server is currently unable to handle the request", Code: 503},
			want:  "listing pod metrics: the server is currently unable to handle the request"},
		{name: "not a list", reply: "hello", want: "decoding the pod metrics list"},
		{name: "items not an array", reply: map[string]any{"items": map[string]any{}}, want: "items: want an array"},
		{name: "bad quantity", reply: map[string]any{"items": []any{map[string]any{"containers": []any{
			map[string]any{"name": "app", "usage": map[string]any{"cpu": "lots"}}}}}}, want: "item 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := kubeclienttest.NewServer(t, runtime.NewScheme(), tc.status, tc.reply)
			client, err := metricsclient.NewForConfig(srv.Config())
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewMetricsServer(client, "").Usage(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if got != nil {
				t.Errorf("samples %v with the error, want none", got)
			}
		})
	}
}

func TestDecodePodMetricsListNullAndEmpty(t *testing.T) {
	for _, body := range []string{`{"items":null}`, `{"kind":"PodMetricsList","items":[]}`, `{}`} {
		got, err := decodePodMetricsList(bytes.NewBufferString(body), nil)
		if err != nil || len(got) != 0 {
			t.Errorf("%s: %v, %v; want no samples and no error", body, got, err)
		}
	}
	if _, err := decodePodMetricsList(bytes.NewBufferString(`{"items":[{}`), nil); err == nil {
		t.Error("a truncated list decoded without an error")
	}
}

// BenchmarkMetricsUsage decodes a list of 10,000 one-container pods, a
// tenth of them tracked, as a replica serving some namespaces reads it:
// streamed, and as the typed client decodes the whole list.
func BenchmarkMetricsUsage(b *testing.B) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	list := &metricsv1beta1.PodMetricsList{}
	for i := range 10000 {
		list.Items = append(list.Items, newPodMetrics("ns-"+string(rune('a'+i%10)), "pod-"+strings.Repeat("x", i%7)+string(rune('0'+i%10)), at,
			testbuild.Resources("123m", "45Mi")))
	}
	raw, err := json.Marshal(list)
	if err != nil {
		b.Fatal(err)
	}
	keep := func(p types.NamespacedName) bool { return p.Namespace == "ns-a" }
	b.Run("streamed", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodePodMetricsList(bytes.NewReader(raw), keep); err != nil {
				b.Fatal(err)
			}
		}
	})
	scheme := runtime.NewScheme()
	if err := metricsv1beta1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	codec := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	b.Run("typed list", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			var l metricsv1beta1.PodMetricsList
			if _, _, err := codec.Decode(raw, nil, &l); err != nil {
				b.Fatal(err)
			}
			for _, u := range typedUsage(b, &l) {
				if keep(u.Pod) {
					_ = u
				}
			}
		}
	})
}

// FuzzDecodePodMetricsList: whatever the metrics API answers, decoding it
// neither panics nor returns samples with an error, and keeps only the pods
// keep accepts.
func FuzzDecodePodMetricsList(f *testing.F) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	list := &metricsv1beta1.PodMetricsList{Items: []metricsv1beta1.PodMetrics{
		newPodMetrics("a", "web-1", at, testbuild.Resources("250m", "100Mi"), testbuild.Resources("1500u", "")),
		newPodMetrics("b", "db-0", at, testbuild.Resources("2", "3Gi")),
	}}
	raw, err := json.Marshal(list)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{string(raw), `{"items":null}`, `{}`, `{"items":[{}`, `[]`, `{"items":[{"containers":[{"usage":{"cpu":"1e3"}}]}]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		keep := func(p types.NamespacedName) bool { return p.Namespace != "b" }
		got, err := decodePodMetricsList(bytes.NewReader(body), keep)
		if err != nil && got != nil {
			t.Fatalf("%d samples with the error %v", len(got), err)
		}
		for _, u := range got {
			if !keep(u.Pod) {
				t.Fatalf("kept a sample of %s, which keep rejects", u.Pod)
			}
		}
	})
}
