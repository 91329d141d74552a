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

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/openvpa/openvpa/admission-controller/pod"
	"github.com/openvpa/openvpa/admission-controller/review"
	"github.com/openvpa/openvpa/admission-controller/vpa"
	"github.com/openvpa/openvpa/pkg/features"
)

type fixedPods struct{}

func (fixedPods) AdmitRequest(_ context.Context, req *review.Request, dst []byte) (pod.Result, error) {
	var p corev1.Pod
	if err := json.Unmarshal(req.Object, &p); err != nil {
		return pod.Result{}, &pod.DecodeError{Err: err}
	}
	if p.Labels["vpa"] != "yes" {
		return pod.Result{}, nil
	}
	return pod.Result{Patch: append(dst, `[{"op":"add","path":"/metadata/annotations/x","value":"y"}]`...), Applied: true}, nil
}

func newTestServer() *Server {
	return NewServer(fixedPods{}, vpa.NewValidator(features.NewGate()), NewMetrics(nil), nil)
}

const podReview = `{"apiVersion":"%s","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"Pod"},
"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ns","operation":"CREATE",
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"vpa":"yes"}},"spec":{"containers":[{"name":"a"}]}}}}`

const invalidVPAReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-2",
"resource":{"group":"autoscaling.k8s.io","version":"v1","resource":"verticalpodautoscalers"},"namespace":"ns","operation":"CREATE",
"object":{"apiVersion":"autoscaling.k8s.io/v1","kind":"VerticalPodAutoscaler","metadata":{"name":"v"},"spec":{"updatePolicy":{"updateMode":"Recreate"}}}}}`

func post(t testing.TB, s http.Handler, method, contentType, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func TestServeHTTP(t *testing.T) {
	v1 := strings.Replace(podReview, "%s", "admission.k8s.io/v1", 1)
	v1beta1 := strings.Replace(podReview, "%s", "admission.k8s.io/v1beta1", 1)
	tests := map[string]struct {
		method, contentType, body string
		wantCode                  int
		wantBody                  string
	}{
		"GET":                {method: "GET", contentType: "application/json", body: v1, wantCode: 405, wantBody: "POST"},
		"wrong content type": {method: "POST", contentType: "text/plain", body: v1, wantCode: 415, wantBody: "application/json"},
		"no content type":    {method: "POST", body: v1, wantCode: 415},
		"charset is fine":    {method: "POST", contentType: "application/json; charset=utf-8", body: v1, wantCode: 200},
		"too large":          {method: "POST", contentType: "application/json", body: `{"a":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, wantCode: 413},
		"malformed JSON":     {method: "POST", contentType: "application/json", body: `{"apiVersion":`, wantCode: 400, wantBody: "not an AdmissionReview"},
		"no request":         {method: "POST", contentType: "application/json", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantCode: 400, wantBody: "has no request"},
		"unknown apiVersion": {method: "POST", contentType: "application/json", body: `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{}}`, wantCode: 400, wantBody: "apiVersion"},
		"v1 pod":             {method: "POST", contentType: "application/json", body: v1, wantCode: 200, wantBody: `"apiVersion":"admission.k8s.io/v1"`},
		"v1beta1 pod":        {method: "POST", contentType: "application/json", body: v1beta1, wantCode: 200, wantBody: `"apiVersion":"admission.k8s.io/v1beta1"`},
		"invalid VPA denied": {method: "POST", contentType: "application/json", body: invalidVPAReview, wantCode: 200, wantBody: "spec.targetRef: Required value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := post(t, newTestServer(), tc.method, tc.contentType, tc.body)
			if rec.Code != tc.wantCode {
				t.Fatalf("code %d, want %d; body %s", rec.Code, tc.wantCode, rec.Body.String())
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("body %q does not contain %q", rec.Body.String(), tc.wantBody)
			}
		})
	}
}

// TestTooLargeChunked sends a body of unknown length (chunked), which the
// server can only limit while reading.
func TestTooLargeChunked(t *testing.T) {
	body := io.MultiReader(strings.NewReader(`{"a":"`), strings.NewReader(strings.Repeat("x", MaxBodyBytes)), strings.NewReader(`"}`))
	req := httptest.NewRequest("POST", "/", body)
	req.Header.Set("Content-Type", "application/json")
	if req.ContentLength != -1 {
		t.Fatalf("content length %d, want unknown", req.ContentLength)
	}
	rec := httptest.NewRecorder()
	newTestServer().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("code %d, want 413; body %s", rec.Code, rec.Body.String())
	}
}

// TestResponseBytes checks the reviews the server writes without
// reflection against encoding/json's encoding of the same review, and the
// Content-Length header.
func TestResponseBytes(t *testing.T) {
	for _, version := range []string{"admission.k8s.io/v1", "admission.k8s.io/v1beta1"} {
		rec := post(t, newTestServer(), "POST", "application/json", strings.Replace(podReview, "%s", version, 1))
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(review)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec.Body.Bytes(), want) {
			t.Errorf("response\n%s\nwant\n%s", rec.Body.Bytes(), want)
		}
		if review.APIVersion != version {
			t.Errorf("apiVersion %q, want %q", review.APIVersion, version)
		}
	}
}

func TestPodResponse(t *testing.T) {
	rec := post(t, newTestServer(), "POST", "application/json", strings.Replace(podReview, "%s", "admission.k8s.io/v1", 1))
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatal(err)
	}
	r := review.Response
	if r == nil || r.UID != "u-1" || !r.Allowed || r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("response %+v", r)
	}
	if !bytes.Contains(r.Patch, []byte(`/metadata/annotations/x`)) {
		t.Errorf("patch %s", r.Patch)
	}
}

func TestVPADenial(t *testing.T) {
	rec := post(t, newTestServer(), "POST", "application/json", invalidVPAReview)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatal(err)
	}
	r := review.Response
	if r.UID != "u-2" || r.Allowed || r.Result == nil || r.Result.Code != 422 {
		t.Fatalf("response %+v", r)
	}
}

// FuzzServeHTTP feeds arbitrary bodies: the handler must not panic and must
// answer 2xx with a decodable AdmissionReview, or 4xx.
func FuzzServeHTTP(f *testing.F) {
	f.Add(strings.Replace(podReview, "%s", "admission.k8s.io/v1", 1))
	f.Add(invalidVPAReview)
	f.Add(`{}`)
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"resource":{"resource":"pods","version":"v1"},"operation":"CREATE","object":null}}`)
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"resource":{"group":"autoscaling.k8s.io","resource":"verticalpodautoscalers"},"operation":"UPDATE","object":{"spec":{"resourcePolicy":{"containerPolicies":[{"minAllowed":{"cpu":"1e100"}}]}}},"oldObject":7}}`)
	s := newTestServer()
	f.Fuzz(func(t *testing.T, body string) {
		rec := post(t, s, "POST", "application/json", body)
		switch {
		case rec.Code >= 200 && rec.Code < 300:
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil {
				t.Fatalf("2xx without a valid review: %v %s", err, rec.Body.String())
			}
		case rec.Code >= 400 && rec.Code < 500:
		default:
			t.Fatalf("status %d", rec.Code)
		}
	})
}
