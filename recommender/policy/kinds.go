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

package policy

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/pkg/informers"
)

// workloads returns the namespace's workloads and the kinds not known yet.
func (c *Controller) workloads(ns string, want []*Source) ([]*Workload, map[schema.GroupKind]bool) {
	c.mu.Lock()
	watches := make(map[schema.GroupKind]cache.SharedIndexInformer, len(c.watches))
	for gk, w := range c.watches {
		watches[gk] = w
	}
	c.mu.Unlock()
	unwatched := map[schema.GroupKind]bool{}
	for _, s := range want {
		for gk := range s.kinds {
			if w, ok := watches[gk]; !ok || !w.HasSynced() {
				unwatched[gk] = true
			}
		}
	}
	for gk := range builtin {
		if w, ok := watches[gk]; !ok || !w.HasSynced() {
			unwatched[gk] = true
		}
	}
	var out []*Workload
	for gk, w := range watches {
		if unwatched[gk] {
			continue
		}
		objs, err := w.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
		if err != nil {
			unwatched[gk] = true
			continue
		}
		for _, o := range objs {
			if wl, ok := o.(*Workload); ok {
				out = append(out, wl)
			}
		}
	}
	return out, unwatched
}

// ensureKinds starts a cache for every kind the policies name, and the
// well-known ones.
func (c *Controller) ensureKinds(ctx context.Context) {
	want := DefaultKinds()
	sources := c.sources()
	for _, s := range sources {
		for gk := range s.kinds {
			want[gk] = true
		}
	}
	for gk := range want {
		c.mu.Lock()
		_, have := c.watches[gk]
		c.mu.Unlock()
		if have {
			continue
		}
		gvr, err := c.resolve(ctx, gk)
		c.mu.Lock()
		if err != nil {
			c.kindErrs[gk] = err
			c.mu.Unlock()
			klog.FromContext(ctx).Info("Cannot watch a kind a policy names", "kind", gk.String(), "err", err)
			continue
		}
		delete(c.kindErrs, gk)
		c.mu.Unlock()
		c.watch(ctx, gk, gvr)
	}
}

// builtin are the resources of the well-known kinds.
var builtin = map[schema.GroupKind]schema.GroupVersionResource{
	{Group: "apps", Kind: "Deployment"}:        {Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Kind: "StatefulSet"}:       {Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Kind: "DaemonSet"}:         {Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "apps", Kind: "ReplicaSet"}:        {Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "batch", Kind: "CronJob"}:          {Group: "batch", Version: "v1", Resource: "cronjobs"},
	{Group: "batch", Kind: "Job"}:              {Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "", Kind: "ReplicationController"}: {Group: "", Version: "v1", Resource: "replicationcontrollers"},
}

// resolve finds the resource of a kind: a well-known one, or a namespaced
// custom resource with the scale subresource in its group's preferred
// version.
func (c *Controller) resolve(ctx context.Context, gk schema.GroupKind) (schema.GroupVersionResource, error) {
	if gvr, ok := builtin[gk]; ok {
		return gvr, nil
	}
	versions, err := c.c.Discovery.Versions(ctx, gk.Group)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("discovering group %q: %w", gk.Group, err)
	}
	for _, v := range versions {
		gv := schema.GroupVersion{Group: gk.Group, Version: v}
		list, err := c.c.Discovery.Resources(ctx, gv)
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("discovering %s: %w", gv, err)
		}
		if gvr, ok, err := scalable(list, gv, gk.Kind); ok || err != nil {
			return gvr, err
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("no resource of kind %s is served", gk)
}

// scalable finds kind in a group version's resources; an error when it is
// cluster-scoped or has no scale subresource.
func scalable(list *metav1.APIResourceList, gv schema.GroupVersion, kind string) (schema.GroupVersionResource, bool, error) {
	for _, r := range list.APIResources {
		if r.Kind != kind || strings.Contains(r.Name, "/") {
			continue
		}
		if !r.Namespaced {
			return schema.GroupVersionResource{}, false, fmt.Errorf("%s %s is cluster-scoped", gv, kind)
		}
		for _, s := range list.APIResources {
			if s.Name == r.Name+"/scale" {
				return gv.WithResource(r.Name), true, nil
			}
		}
		return schema.GroupVersionResource{}, false, fmt.Errorf("%s %s has no scale subresource", gv, kind)
	}
	return schema.GroupVersionResource{}, false, nil
}

// watch starts the metadata cache of one kind; once it has synced, every
// namespace is planned again.
func (c *Controller) watch(ctx context.Context, gk schema.GroupKind, gvr schema.GroupVersionResource) {
	// A metadata-only list and watch: client-go's metadatainformer would
	// link its all-groups informer factory into the recommender.
	client := c.c.Metadata.Resource(gvr).Namespace(c.o.Namespaces.WatchNamespace())
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, lo)
		},
		WatchFuncWithContext: client.Watch,
	}
	inf := cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, informers.DefaultResync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	apiVersion := gvr.GroupVersion().String()
	_ = inf.SetTransform(workloadTransform(gk, apiVersion))
	if _, err := inf.AddEventHandler(c.workloadHandler()); err != nil {
		klog.FromContext(ctx).Error(err, "Adding the workload handler", "kind", gk.String())
		return
	}
	c.mu.Lock()
	c.watches[gk] = inf
	c.mu.Unlock()
	go inf.RunWithContext(ctx)
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			klog.FromContext(ctx).V(1).Info("Watching workloads", "kind", gk.String(), "resource", gvr.String())
			c.enqueueAll()
		}
	}()
}

// workloadTransform turns cached metadata into a *Workload; idempotent, as
// a watch-list start runs it twice.
func workloadTransform(gk schema.GroupKind, apiVersion string) cache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *Workload:
			return o, nil
		case *metav1.PartialObjectMetadata:
			w := &Workload{
				ObjectMeta: metav1.ObjectMeta{
					Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion, Labels: o.Labels,
				},
				GroupKind: gk, APIVersion: apiVersion,
			}
			for _, ref := range o.OwnerReferences {
				if ref.Controller != nil && *ref.Controller {
					w.Owned = true
				}
			}
			return w, nil
		}
		return obj, nil
	}
}
