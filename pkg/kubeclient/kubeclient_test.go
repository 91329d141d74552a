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
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

func TestProtobuf(t *testing.T) {
	cfg := &rest.Config{Host: "https://example", QPS: 5}
	pb := Protobuf(cfg)
	if pb.ContentType != "application/vnd.kubernetes.protobuf" || pb.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("content types %q / %q", pb.ContentType, pb.AcceptContentTypes)
	}
	if pb.Host != cfg.Host || pb.QPS != cfg.QPS {
		t.Errorf("copy lost settings: %+v", pb)
	}
	if cfg.ContentType != "" || cfg.AcceptContentTypes != "" {
		t.Errorf("original modified: %+v", cfg)
	}
}

func TestRESTClient(t *testing.T) {
	cfg := &rest.Config{Host: "https://example"}
	for _, gv := range []schema.GroupVersion{corev1.SchemeGroupVersion, {Group: "apps", Version: "v1"}, {Group: "batch", Version: "v1"},
		{Group: "coordination.k8s.io", Version: "v1"}} {
		if _, err := RESTClient(cfg, gv); err != nil {
			t.Errorf("RESTClient(%s): %v", gv, err)
		}
	}
	// The lean scheme links only the kinds the components read.
	if _, err := RESTClient(cfg, policyv1.SchemeGroupVersion); err == nil || !strings.Contains(err.Error(), "policy/v1") {
		t.Errorf("RESTClient(policy/v1) error = %v, want one naming the group version", err)
	}
	// Other groups are linked where they are used.
	if _, err := RESTClient(cfg, policyv1.SchemeGroupVersion, policyv1.AddToScheme); err != nil {
		t.Errorf("RESTClient(policy/v1, policyv1.AddToScheme): %v", err)
	}
	if builtinScheme.IsVersionRegistered(policyv1.SchemeGroupVersion) {
		t.Errorf("a client with more kinds changed the shared scheme")
	}
}

func TestDiscovery(t *testing.T) {
	docs := map[string]string{
		"/api":              `{"kind":"APIVersions","versions":["v1"]}`,
		"/apis/example.com": `{"kind":"APIGroup","name":"example.com","versions":[{"groupVersion":"example.com/v1beta1","version":"v1beta1"},{"groupVersion":"example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}}`,
		"/api/v1":           `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","namespaced":true,"kind":"Pod","verbs":["get"]}]}`,
		"/apis/broken.io":   `{"kind":`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(doc))
	}))
	defer srv.Close()
	d, err := NewDiscovery(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := d.Versions(ctx, ""); err != nil || strings.Join(v, ",") != "v1" {
		t.Errorf("core versions = %v, %v", v, err)
	}
	if v, err := d.Versions(ctx, "example.com"); err != nil || strings.Join(v, ",") != "v1,v1beta1" {
		t.Errorf("example.com versions = %v, %v; want the preferred version first", v, err)
	}
	if l, err := d.Resources(ctx, corev1.SchemeGroupVersion); err != nil || len(l.APIResources) != 1 || l.APIResources[0].Kind != "Pod" {
		t.Errorf("core/v1 resources = %v, %v", l, err)
	}
	if _, err := d.Versions(ctx, "missing.io"); !apierrors.IsNotFound(err) {
		t.Errorf("missing group error = %v, want NotFound", err)
	}
	if _, err := d.Versions(ctx, "broken.io"); err == nil || !strings.Contains(err.Error(), "decoding /apis/broken.io") {
		t.Errorf("malformed document error = %v, want a decoding error naming the path", err)
	}
}
