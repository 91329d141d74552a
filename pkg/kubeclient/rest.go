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
	"encoding/json"
	"fmt"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// The generated clientset for the built-in types (k8s.io/client-go/kubernetes)
// registers every API group in one scheme and links all of them, with their
// typed clients, informers and listers, into any binary that imports it: about
// 20 MB of binary, most of it paged in at start-up. A component that reads a
// handful of built-in kinds uses the REST clients below instead, over a scheme
// holding only those kinds.

// builtinScheme holds the built-in kinds that the lean clients decode.
var builtinScheme = newBuiltinScheme()

func newBuiltinScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(appsv1.AddToScheme(s))
	utilruntime.Must(batchv1.AddToScheme(s))
	utilruntime.Must(coordinationv1.AddToScheme(s))
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// RESTClient returns a client for one group version of the built-in kinds
// core/v1, apps/v1, batch/v1 and coordination.k8s.io/v1, speaking protobuf.
// It serves lists and watches (cache.NewFilteredListWatchFromClient) and
// plain reads and writes. A component that writes other built-in kinds
// passes their groups' AddToScheme functions as more: they are linked only
// into the binaries that do (policy/v1 Evictions through the core client in
// the updater, admissionregistration.k8s.io/v1 in the admission controller).
func RESTClient(cfg *rest.Config, gv schema.GroupVersion, more ...func(*runtime.Scheme) error) (*rest.RESTClient, error) {
	scheme := builtinScheme
	if len(more) > 0 {
		scheme = newBuiltinScheme()
		for _, add := range more {
			if err := add(scheme); err != nil {
				return nil, fmt.Errorf("building the %s client: %w", gv, err)
			}
		}
	}
	if !scheme.IsVersionRegistered(gv) {
		return nil, fmt.Errorf("group version %s is not among the lean client's kinds", gv)
	}
	c := Protobuf(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", gv, err)
	}
	return rc, nil
}

// Discovery reads the API server's discovery documents (/api, /apis/<group>,
// /apis/<group>/<version>) as JSON. It caches nothing.
type Discovery struct {
	client rest.Interface
}

// NewDiscovery returns a Discovery over cfg.
func NewDiscovery(cfg *rest.Config) (*Discovery, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.APIPath = "/"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(builtinScheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the discovery client: %w", err)
	}
	return &Discovery{client: rc}, nil
}

// Versions returns the versions a group serves, the preferred one first. The
// core group ("") is read from /api.
func (d *Discovery) Versions(ctx context.Context, group string) ([]string, error) {
	if group == "" {
		var v metav1.APIVersions
		if err := d.Get(ctx, "/api", &v); err != nil {
			return nil, err
		}
		return v.Versions, nil
	}
	var g metav1.APIGroup
	if err := d.Get(ctx, path.Join("/apis", group), &g); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(g.Versions))
	if g.PreferredVersion.Version != "" {
		out = append(out, g.PreferredVersion.Version)
	}
	for _, v := range g.Versions {
		if v.Version != g.PreferredVersion.Version {
			out = append(out, v.Version)
		}
	}
	return out, nil
}

// Resources returns the resources served in one group version.
func (d *Discovery) Resources(ctx context.Context, gv schema.GroupVersion) (*metav1.APIResourceList, error) {
	p := path.Join("/apis", gv.Group, gv.Version)
	if gv.Group == "" {
		p = path.Join("/api", gv.Version)
	}
	var l metav1.APIResourceList
	if err := d.Get(ctx, p, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Get reads the JSON document at an absolute path into out.
func (d *Discovery) Get(ctx context.Context, absPath string, out any) error {
	raw, err := d.client.Get().AbsPath(absPath).SetHeader("Accept", runtime.ContentTypeJSON).DoRaw(ctx)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decoding %s: %w", absPath, err)
	}
	return nil
}
