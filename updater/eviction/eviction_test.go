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

package eviction

import (
	"context"
	"errors"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/record"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/kubeclient/kubeclienttest"
)

func TestEvictPostsToTheEvictionSubresource(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(policyv1.AddToScheme(scheme))
	status := func(code int, reason metav1.StatusReason) *metav1.Status {
		return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Code: int32(code), Reason: reason,
			Status: map[bool]string{true: metav1.StatusSuccess, false: metav1.StatusFailure}[code < 300]}
	}
	tests := map[string]struct {
		status     int
		reply      *metav1.Status
		wantErr    func(error) bool
		wantEvents int
	}{
		"evicted: an event on the pod and one on the VPA": {status: http.StatusCreated, reply: status(http.StatusCreated, ""), wantEvents: 2},
		"refused by a disruption budget": {status: http.StatusTooManyRequests, reply: status(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests),
			wantErr: func(err error) bool { return errors.Is(err, ErrRefused) && apierrors.IsTooManyRequests(err) }},
		"another failure is not a refusal": {status: http.StatusForbidden, reply: status(http.StatusForbidden, metav1.StatusReasonForbidden),
			wantErr: func(err error) bool { return !errors.Is(err, ErrRefused) && apierrors.IsForbidden(err) }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := kubeclienttest.NewServer(t, scheme, tc.status, tc.reply)
			client, err := NewClient(s.Config())
			if err != nil {
				t.Fatal(err)
			}
			recorder := record.NewFakeRecorder(10)
			e := Evicter{API: client, Recorder: recorder}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1"}}
			vpa := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
			err = e.Evict(context.Background(), pod, vpa)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !tc.wantErr(err) {
				t.Fatalf("Evict = %v", err)
			}
			if len(recorder.Events) != tc.wantEvents {
				t.Errorf("%d events, want %d", len(recorder.Events), tc.wantEvents)
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != "/api/v1/namespaces/ns/pods/web-1/eviction" {
				t.Errorf("request %s %s, want POST to the pod's eviction subresource", r.Method, r.Path)
			}
			ev, ok := r.Body.(*policyv1.Eviction)
			if !ok || ev.Name != "web-1" || ev.GetObjectKind().GroupVersionKind().String() != "policy/v1, Kind=Eviction" {
				t.Errorf("body %#v (%s), want a policy/v1 Eviction of web-1", r.Body, r.ContentType)
			}
		})
	}
}
