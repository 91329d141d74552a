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

package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// discoveryServer serves the discovery documents of example.com (v1 preferred,
// v1beta1 too), apps, and the scale subresources below; it counts requests
// per path.
func discoveryServer(t *testing.T) (*rest.Config, func(path string) int) {
	t.Helper()
	docs := map[string]string{
		"/apis/example.com": `{"kind":"APIGroup","name":"example.com","versions":[{"groupVersion":"example.com/v1","version":"v1"},{"groupVersion":"example.com/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}}`,
		"/apis/example.com/v1": `{"kind":"APIResourceList","groupVersion":"example.com/v1","resources":[
			{"name":"foos","namespaced":true,"kind":"Foo","verbs":["get"]},
			{"name":"foos/scale","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get"]},
			{"name":"bars","namespaced":true,"kind":"Bar","verbs":["get"]},
			{"name":"clusterfoos","namespaced":false,"kind":"ClusterFoo","verbs":["get"]},
			{"name":"clusterfoos/scale","namespaced":false,"kind":"Scale","verbs":["get"]}]}`,
		"/apis/example.com/v1beta1": `{"kind":"APIResourceList","groupVersion":"example.com/v1beta1","resources":[
			{"name":"foos","namespaced":true,"kind":"Foo","verbs":["get"]},
			{"name":"foos/scale","namespaced":true,"kind":"Scale","verbs":["get"]}]}`,
		"/apis/example.com/v1/namespaces/ns/foos/web/scale":      `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web","namespace":"ns","ownerReferences":[{"apiVersion":"example.com/v1","kind":"Roll","name":"r","uid":"u","controller":true}]},"spec":{"replicas":3},"status":{"replicas":3,"selector":"app=web"}}`,
		"/apis/example.com/v1beta1/namespaces/ns/foos/old/scale": `{"kind":"Scale","apiVersion":"example.com/v1beta1","metadata":{"name":"old","namespace":"ns"},"spec":{"replicas":1},"status":{"replicas":1,"selector":{"tier":"db","app":"old"}}}`,
		"/apis/example.com/v1/clusterfoos/bad/scale":             `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"bad"},"status":{"selector":7}}`,
		"/apis/example.com/v1/clusterfoos/c/scale":               `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"c"},"status":{"selector":"app=c"}}`,
	}
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		doc, ok := docs[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			doc = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not found"}`
		}
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000}, func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[p]
	}
}

func TestScaleClient(t *testing.T) {
	cfg, hits := discoveryServer(t)
	c, err := NewScaleClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	foo := schema.GroupKind{Group: "example.com", Kind: "Foo"}
	tests := map[string]struct {
		gk           schema.GroupKind
		namespace    string
		name         string
		wantSelector string
		wantReplicas int32
		wantOwner    string
		wantErr      string
		wantNotFound bool
		wantNoMatch  bool
	}{
		"preferred version, string selector": {gk: foo, namespace: "ns", name: "web", wantSelector: "app=web", wantReplicas: 3, wantOwner: "r"},
		"older version, map selector":        {gk: foo, namespace: "ns", name: "old", wantSelector: "app=old,tier=db", wantReplicas: 1},
		"cluster-scoped kind":                {gk: schema.GroupKind{Group: "example.com", Kind: "ClusterFoo"}, name: "c", wantSelector: "app=c"},
		"object missing in every version":    {gk: foo, namespace: "ns", name: "gone", wantNotFound: true},
		"malformed selector":                 {gk: schema.GroupKind{Group: "example.com", Kind: "ClusterFoo"}, name: "bad", wantErr: "status.selector"},
		"kind without scale subresource":     {gk: schema.GroupKind{Group: "example.com", Kind: "Bar"}, namespace: "ns", name: "b", wantNoMatch: true},
		"unknown kind":                       {gk: schema.GroupKind{Group: "example.com", Kind: "Nope"}, namespace: "ns", name: "n", wantNoMatch: true},
		"unknown group":                      {gk: schema.GroupKind{Group: "missing.io", Kind: "Foo"}, namespace: "ns", name: "n", wantNoMatch: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := c.GetScale(context.Background(), tc.gk, tc.namespace, tc.name)
			switch {
			case tc.wantNoMatch:
				if !meta.IsNoMatchError(err) {
					t.Fatalf("GetScale() error = %v, want a no-match error", err)
				}
				return
			case tc.wantNotFound:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("GetScale() error = %v, want NotFound", err)
				}
				return
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GetScale() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("GetScale() error = %v", err)
			}
			if s.Status.Selector != tc.wantSelector || s.Spec.Replicas != tc.wantReplicas {
				t.Errorf("GetScale() = selector %q replicas %d, want %q %d", s.Status.Selector, s.Spec.Replicas, tc.wantSelector, tc.wantReplicas)
			}
			if got := ControllerOf(s.Namespace, s.OwnerReferences); (got == nil) != (tc.wantOwner == "") || (got != nil && got.Name != tc.wantOwner) {
				t.Errorf("controller = %v, want %q", got, tc.wantOwner)
			}
		})
	}
	before := hits("/apis/example.com/v1")
	if _, err := c.GetScale(context.Background(), foo, "ns", "web"); err != nil {
		t.Fatal(err)
	}
	if n := hits("/apis/example.com/v1") - before; n != 0 {
		t.Errorf("a known kind's discovery was read %d more times, want none (its mappings are cached)", n)
	}
}
