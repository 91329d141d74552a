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

package leases

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestClientWire checks the requests New sends and how it
// reads the answers, against a stub server; e2e/leaderelection runs it
// against a real API server.
func TestClientWire(t *testing.T) {
	type request struct{ method, path, contentType, accept string }
	var (
		mu       sync.Mutex
		requests []request
	)
	status := func(w http.ResponseWriter, code int, reason metav1.StatusReason) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Reason: reason, Code: int32(code), Message: string(reason),
		})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, request{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Accept")})
		mu.Unlock()
		switch r.Method {
		case http.MethodGet:
			status(w, http.StatusNotFound, metav1.StatusReasonNotFound)
		case http.MethodPost:
			// Echo the protobuf body: the client must decode what it encoded.
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		case http.MethodPut:
			status(w, http.StatusConflict, metav1.StatusReasonConflict)
		}
	}))
	defer srv.Close()

	cfg := &rest.Config{Host: srv.URL}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ContentType != "" || cfg.GroupVersion != nil {
		t.Errorf("New changed the caller's config: %+v", cfg)
	}
	ctx := context.Background()

	if _, err := c.Get(ctx, "ns", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("Get() error = %v, want NotFound", err)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), LeaseTransitions: ptr.To[int32](3)},
	}
	created, err := c.Create(ctx, lease)
	if err != nil {
		t.Fatalf("Create() = %v", err)
	}
	if created.Name != "l" || ptr.Deref(created.Spec.HolderIdentity, "") != "me" || ptr.Deref(created.Spec.LeaseTransitions, 0) != 3 {
		t.Errorf("Create() returned %+v", created)
	}
	if _, err := c.Update(ctx, lease); !apierrors.IsConflict(err) {
		t.Errorf("Update() error = %v, want Conflict", err)
	}
	if _, err := c.Update(ctx, nil); err == nil {
		t.Error("Update(nil) = nil error")
	}

	want := []request{
		{method: http.MethodGet, path: "/apis/coordination.k8s.io/v1/namespaces/ns/leases/missing"},
		{method: http.MethodPost, path: "/apis/coordination.k8s.io/v1/namespaces/ns/leases", contentType: runtime.ContentTypeProtobuf},
		{method: http.MethodPut, path: "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", contentType: runtime.ContentTypeProtobuf},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) != len(want) {
		t.Fatalf("requests = %+v, want %d", requests, len(want))
	}
	for i, w := range want {
		got := requests[i]
		if got.method != w.method || got.path != w.path || got.contentType != w.contentType {
			t.Errorf("request %d = %s %s (Content-Type %q), want %s %s (%q)", i, got.method, got.path, got.contentType, w.method, w.path, w.contentType)
		}
		if got.accept != runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON {
			t.Errorf("request %d Accept = %q, want protobuf first", i, got.accept)
		}
	}
}

func TestNewNeedsAConfig(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Fatal("New(nil) = nil error")
	}
}
