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

package status

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclientset "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	vpascheme "github.com/openvpa/openvpa/apis/generated/clientset/versioned/scheme"
	"github.com/openvpa/openvpa/pkg/kubeclient/kubeclienttest"
	"github.com/openvpa/openvpa/recommender/checkpoint"
)

// answeredVPA is what the API server answers to a status write: the whole
// object, with the managed fields of every writer.
func answeredVPA() *vpav1.VerticalPodAutoscaler {
	at := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	fields := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	mode := vpav1.UpdateModeOff
	return &vpav1.VerticalPodAutoscaler{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling.k8s.io/v1", Kind: "VerticalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "0b8f6c1e-5a1d-4d36-9d0b-2f3c1a7e9b10", ResourceVersion: "42",
			Generation: 3, CreationTimestamp: at, Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 600)},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "autoscaling.k8s.io/v1", Time: &at,
					FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:targetRef":{},"f:updatePolicy":{".":{},"f:updateMode":{}}}}`)},
				{Manager: checkpoint.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "autoscaling.k8s.io/v1", Time: &at,
					FieldsType: "FieldsV1", FieldsV1: fields(`{"f:status":{".":{},"f:conditions":{},"f:recommendation":{".":{},"f:containerRecommendations":{}}}}`), Subresource: "status"},
			}},
		Spec: vpav1.VerticalPodAutoscalerSpec{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode}},
		Status: status("250m", "100m", "1", vpav1.VerticalPodAutoscalerCondition{Type: vpav1.RecommendationProvided, Status: "True", LastTransitionTime: at},
			vpav1.VerticalPodAutoscalerCondition{Type: vpav1.LowConfidence, Status: "True", LastTransitionTime: at}),
	}
}

func TestAPIWriterKeepsTheAnswersVersionAndStatus(t *testing.T) {
	answer := answeredVPA()
	srv := kubeclienttest.NewServer(t, runtime.NewScheme(), 0, answer)
	cs, err := vpaclientset.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	base := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "41"}}
	got, err := APIWriter{Client: cs.AutoscalingV1()}.WriteStatus(context.Background(), base, answer.Status)
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "ns" || got.Name != "web" || got.ResourceVersion != "42" {
		t.Errorf("written %s/%s at %q, want ns/web at the answer's 42", got.Namespace, got.Name, got.ResourceVersion)
	}
	if !apiequality.Semantic.DeepEqual(got.Status, answer.Status) {
		t.Errorf("written status %+v, want the answer's %+v", got.Status, answer.Status)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPatch || r.Path != "/apis/autoscaling.k8s.io/v1/namespaces/ns/verticalpodautoscalers/web/status" ||
		r.ContentType != "application/json-patch+json" || r.Query != "fieldManager="+checkpoint.FieldManager {
		t.Errorf("request %s %s?%s (%s), want a JSON patch of the status subresource by %s", r.Method, r.Path, r.Query, r.ContentType, checkpoint.FieldManager)
	}
	var patch []struct {
		Op, Path string
		Value    vpav1.VerticalPodAutoscalerStatus
	}
	if err := json.Unmarshal(r.Raw, &patch); err != nil || len(patch) != 1 || patch[0].Op != "add" || patch[0].Path != "/status" ||
		!apiequality.Semantic.DeepEqual(patch[0].Value, answer.Status) {
		t.Errorf("patch %s (%v), want one add of the status", r.Raw, err)
	}
}

func TestAPIWriterErrors(t *testing.T) {
	base := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	for _, tc := range []struct {
		name   string
		status int
		reply  any
		want   string
	}{
		{name: "gone", status: http.StatusNotFound, want: "could not find the requested resource",
			reply: metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404,
				Message: `verticalpodautoscalers.autoscaling.k8s.io "web" not found`}},
		{name: "not an object", reply: []int{1}, want: "decoding the answer to the status write"},
		{name: "no resourceVersion", reply: map[string]any{"status": map[string]any{}}, want: "no resourceVersion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := kubeclienttest.NewServer(t, runtime.NewScheme(), tc.status, tc.reply)
			cs, err := vpaclientset.NewForConfig(srv.Config())
			if err != nil {
				t.Fatal(err)
			}
			got, err := APIWriter{Client: cs.AutoscalingV1()}.WriteStatus(context.Background(), base, vpav1.VerticalPodAutoscalerStatus{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || got != nil {
				t.Errorf("WriteStatus = %v, %v; want an error containing %q", got, err, tc.want)
			}
		})
	}
}

// BenchmarkStatusAnswer decodes the answer to a status write: what the
// writer keeps of it, and the whole object as the typed client decodes it.
func BenchmarkStatusAnswer(b *testing.B) {
	raw, err := json.Marshal(answeredVPA())
	if err != nil {
		b.Fatal(err)
	}
	base := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	b.Run("version and status", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeWrittenStatus(base, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	codec := serializer.NewCodecFactory(vpascheme.Scheme).UniversalDeserializer()
	b.Run("whole object", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v vpav1.VerticalPodAutoscaler
			if _, _, err := codec.Decode(raw, nil, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
