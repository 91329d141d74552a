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
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// ScaleGetter reads the scale subresource of an object of any kind.
type ScaleGetter interface {
	GetScale(ctx context.Context, gk schema.GroupKind, namespace, name string) (*autoscalingv1.Scale, error)
}

// ScaleClient is a ScaleGetter over the API server. It finds the resource that
// serves a kind, and whether it has a scale subresource, from the discovery
// documents of the kind's group (the preferred version first), and remembers
// what it found. A kind it cannot find is looked up again on the next call:
// the Resolver caches failed reads for Options.ErrorCacheTTL, which bounds
// how often that happens.
//
// The scale subresource of custom resources and of the apps/v1 kinds is an
// autoscaling/v1 Scale; older groups return their own Scale type whose
// status.selector is a map and whose status.targetSelector is the string
// form. Both are accepted.
type ScaleClient struct {
	disc *kubeclient.Discovery

	mu       sync.Mutex
	mappings map[schema.GroupKind][]scaleMapping
}

// scaleMapping is one group version and resource serving a kind with a scale
// subresource.
type scaleMapping struct {
	gv         schema.GroupVersion
	resource   string
	namespaced bool
}

var _ ScaleGetter = (*ScaleClient)(nil)

// NewScaleClient returns a ScaleClient over cfg.
func NewScaleClient(cfg *rest.Config) (*ScaleClient, error) {
	d, err := kubeclient.NewDiscovery(cfg)
	if err != nil {
		return nil, err
	}
	return NewScaleClientFor(d), nil
}

// NewScaleClientFor returns a ScaleClient reading through d.
func NewScaleClientFor(d *kubeclient.Discovery) *ScaleClient {
	return &ScaleClient{disc: d, mappings: map[schema.GroupKind][]scaleMapping{}}
}

// GetScale reads the scale subresource of namespace/name through every
// version of its kind that serves one, returning the first success or the
// last error. A kind with no scale subresource gives a *meta.NoKindMatchError.
func (c *ScaleClient) GetScale(ctx context.Context, gk schema.GroupKind, namespace, name string) (*autoscalingv1.Scale, error) {
	mappings, err := c.mappingsFor(ctx, gk)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, m := range mappings {
		var s scaleDoc
		if err := c.disc.Get(ctx, m.scalePath(namespace, name), &s); err != nil {
			lastErr = err
			continue
		}
		out, err := s.toAutoscalingV1()
		if err != nil {
			lastErr = fmt.Errorf("reading the scale of %s %s/%s: %w", gk, namespace, name, err)
			continue
		}
		return out, nil
	}
	return nil, lastErr
}

func (m scaleMapping) scalePath(namespace, name string) string {
	p := []string{"/apis", m.gv.Group, m.gv.Version}
	if m.gv.Group == "" {
		p = []string{"/api", m.gv.Version}
	}
	if m.namespaced {
		p = append(p, "namespaces", namespace)
	}
	return path.Join(append(p, m.resource, name, "scale")...)
}

func (c *ScaleClient) mappingsFor(ctx context.Context, gk schema.GroupKind) ([]scaleMapping, error) {
	c.mu.Lock()
	m, ok := c.mappings[gk]
	c.mu.Unlock()
	if ok {
		return m, nil
	}
	versions, err := c.disc.Versions(ctx, gk.Group)
	if err != nil {
		return nil, noMatch(gk, err)
	}
	for _, v := range versions {
		gv := schema.GroupVersion{Group: gk.Group, Version: v}
		l, err := c.disc.Resources(ctx, gv)
		if err != nil {
			return nil, fmt.Errorf("discovering %s: %w", gv, err)
		}
		m = append(m, scaleMappings(gv, gk.Kind, l.APIResources)...)
	}
	if len(m) == 0 {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	c.mu.Lock()
	c.mappings[gk] = m
	c.mu.Unlock()
	return m, nil
}

// noMatch turns a missing group into a NoKindMatchError, as a RESTMapper would.
func noMatch(gk schema.GroupKind, err error) error {
	if apierrors.IsNotFound(err) {
		return &meta.NoKindMatchError{GroupKind: gk}
	}
	return fmt.Errorf("discovering group %q: %w", gk.Group, err)
}

// scaleMappings returns the resources of one group version that serve kind
// and have a scale subresource.
func scaleMappings(gv schema.GroupVersion, kind string, resources []metav1.APIResource) []scaleMapping {
	hasScale := map[string]bool{}
	for _, r := range resources {
		if base, ok := strings.CutSuffix(r.Name, "/scale"); ok {
			hasScale[base] = true
		}
	}
	var out []scaleMapping
	for _, r := range resources {
		if r.Kind == kind && !strings.Contains(r.Name, "/") && hasScale[r.Name] {
			out = append(out, scaleMapping{gv: gv, resource: r.Name, namespaced: r.Namespaced})
		}
	}
	return out
}

// scaleDoc is the union of autoscaling/v1 Scale and the older groups' Scale.
type scaleDoc struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas *int32 `json:"replicas,omitempty"`
	} `json:"spec,omitempty"`
	Status struct {
		Replicas       int32           `json:"replicas"`
		Selector       json.RawMessage `json:"selector,omitempty"`
		TargetSelector string          `json:"targetSelector,omitempty"`
	} `json:"status,omitempty"`
}

func (s *scaleDoc) toAutoscalingV1() (*autoscalingv1.Scale, error) {
	out := &autoscalingv1.Scale{ObjectMeta: s.ObjectMeta}
	if s.Spec.Replicas != nil {
		out.Spec.Replicas = *s.Spec.Replicas
	}
	out.Status.Replicas = s.Status.Replicas
	out.Status.Selector = s.Status.TargetSelector
	if out.Status.Selector != "" || len(s.Status.Selector) == 0 || string(s.Status.Selector) == "null" {
		return out, nil
	}
	var str string
	if err := json.Unmarshal(s.Status.Selector, &str); err == nil {
		out.Status.Selector = str
		return out, nil
	}
	var set map[string]string
	if err := json.Unmarshal(s.Status.Selector, &set); err != nil {
		return nil, fmt.Errorf("status.selector is neither a string nor a label map: %w", err)
	}
	out.Status.Selector = labels.SelectorFromSet(set).String()
	return out, nil
}
