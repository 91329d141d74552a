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

package events

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/kubeclient/kubeclienttest"
)

func newServer(t *testing.T, status int) (*kubeclienttest.Server, kubeclient.Clients) {
	t.Helper()
	s := kubeclienttest.NewServer(t, scheme, status, &corev1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}})
	c, err := kubeclient.NewClients(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func TestSinkWritesEachEventInItsNamespace(t *testing.T) {
	s, c := newServer(t, http.StatusOK)
	e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web.1"}}
	sink := Sink{Clients: c}
	if _, err := sink.Create(e); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Update(e); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Patch(e, []byte(`{"count":2}`)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"POST /api/v1/namespaces/team/events",
		"PUT /api/v1/namespaces/team/events/web.1",
		"PATCH /api/v1/namespaces/team/events/web.1 " + string(types.StrategicMergePatchType),
	}
	reqs := s.Requests()
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d: %+v", len(reqs), len(want), reqs)
	}
	for i, r := range reqs {
		got := r.Method + " " + r.Path
		if r.Method == http.MethodPatch {
			got += " " + r.ContentType
		}
		if got != want[i] {
			t.Errorf("request %d: %s, want %s", i, got, want[i])
		}
	}
}

func TestRecorderNamesVPAsAndPods(t *testing.T) {
	s, c := newServer(t, http.StatusCreated)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recorder, stop := NewRecorder(ctx, c, "vpa-test")
	defer stop()
	recorder.Event(&vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "u1"}},
		corev1.EventTypeNormal, "EvictedPod", "evicted web-1")
	recorder.Event(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-1", UID: "u2"}},
		corev1.EventTypeNormal, "EvictedByVPA", "evicted")

	want := map[string]string{"VerticalPodAutoscaler": "autoscaling.k8s.io/v1", "Pod": "v1"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]string{}
		for _, r := range s.Requests() {
			ev, ok := r.Body.(*corev1.Event)
			if !ok || r.Path != "/api/v1/namespaces/team/events" {
				continue
			}
			if ev.Source.Component != "vpa-test" {
				t.Errorf("event source %q, want vpa-test", ev.Source.Component)
			}
			got[ev.InvolvedObject.Kind] = ev.InvolvedObject.APIVersion
		}
		if len(got) == len(want) {
			for k, v := range want {
				if got[k] != v {
					t.Errorf("event about %s has apiVersion %q, want %q", k, got[k], v)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events written about %v, want %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
