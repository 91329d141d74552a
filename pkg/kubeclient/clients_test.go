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

package kubeclient

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openvpa/openvpa/pkg/kubeclient/kubeclienttest"
)

const protobuf = "application/vnd.kubernetes.protobuf"

func TestClientsRequests(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Generation: 3}}
	event := &corev1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p.1"}, Reason: "R"}
	tests := map[string]struct {
		status      int
		reply       any
		call        func(t *testing.T, c Clients) error
		method      string
		path        string
		contentType string
		bodyKind    string // of the request body
	}{
		"a resize patches the pod's resize subresource": {
			reply: pod,
			call: func(t *testing.T, c Clients) error {
				p, err := c.Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{FieldManager: "m"}, "resize")
				if err == nil && p.Generation != 3 {
					t.Errorf("patched pod %+v, want the reply decoded", p)
				}
				return err
			},
			method: http.MethodPatch, path: "/api/v1/namespaces/ns/pods/p/resize", contentType: string(types.StrategicMergePatchType),
		},
		"an event is created in its namespace, as protobuf": {
			reply: event, status: http.StatusCreated,
			call: func(_ *testing.T, c Clients) error {
				_, err := c.Events("team").Create(ctx, event, metav1.CreateOptions{})
				return err
			},
			method: http.MethodPost, path: "/api/v1/namespaces/team/events", contentType: protobuf, bodyKind: "/v1, Kind=Event",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := kubeclienttest.NewServer(t, builtinScheme, tc.status, tc.reply)
			c, err := NewClients(s.Config())
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.call(t, c); err != nil {
				t.Fatal(err)
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1: %+v", len(reqs), reqs)
			}
			r := reqs[0]
			if r.Method != tc.method || r.Path != tc.path || r.ContentType != tc.contentType {
				t.Errorf("request %s %s (%s), want %s %s (%s)", r.Method, r.Path, r.ContentType, tc.method, tc.path, tc.contentType)
			}
			if tc.bodyKind != "" {
				if r.Body == nil {
					t.Fatalf("no object in the body %q", r.Raw)
				}
				if got := r.Body.GetObjectKind().GroupVersionKind().String(); got != tc.bodyKind {
					t.Errorf("body kind %q, want %q", got, tc.bodyKind)
				}
			}
		})
	}
}
