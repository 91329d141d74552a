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

package hpa

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// Resync is the HPA informer's resync period.
const Resync = 10 * time.Minute

// Cache is a trimmed informer of the autoscaling/v2 HorizontalPodAutoscalers.
// It is kept out of a component's informers.Set on purpose: a component
// whose RBAC predates the HPA rule (upstream's does not grant it) still
// starts and becomes ready; until the cache has synced, InNamespace returns
// nothing and no conflict is reported.
type Cache struct {
	set      *informers.Set
	informer informers.Informer
}

// NewCache builds the cache of the HPAs in namespace ("" for all) over a
// lean autoscaling/v2 client from cfg.
func NewCache(cfg *rest.Config, namespace string) (*Cache, error) {
	client, err := kubeclient.RESTClient(cfg, autoscalingv2.SchemeGroupVersion, autoscalingv2.AddToScheme)
	if err != nil {
		return nil, err
	}
	return NewCacheFromClient(client, namespace), nil
}

// NewCacheFromClient builds the cache over an autoscaling/v2 REST client.
func NewCacheFromClient(client rest.Interface, namespace string) *Cache {
	set := &informers.Set{}
	inf := set.Add(client, "horizontalpodautoscalers", namespace, &autoscalingv2.HorizontalPodAutoscaler{}, Resync, nil, Trim)
	return &Cache{set: set, informer: inf}
}

// Start runs the informer until ctx ends.
func (c *Cache) Start(ctx context.Context) { c.set.Start(ctx) }

// HasSynced reports whether the first list has arrived.
func (c *Cache) HasSynced() bool { return c.informer.HasSynced() }

// InNamespace returns the cached HPAs of a namespace; nil before the cache
// has synced.
func (c *Cache) InNamespace(namespace string) []*autoscalingv2.HorizontalPodAutoscaler {
	hpas, _ := c.Lookup(namespace)
	return hpas
}

// Lookup returns the cached HPAs of a namespace and whether the cache has
// synced: before it has, no HPA is known and ok is false.
func (c *Cache) Lookup(namespace string) (hpas []*autoscalingv2.HorizontalPodAutoscaler, ok bool) {
	if c == nil || !c.informer.HasSynced() {
		return nil, false
	}
	objs, err := c.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, false
	}
	out := make([]*autoscalingv2.HorizontalPodAutoscaler, 0, len(objs))
	for _, o := range objs {
		if h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler); ok {
			out = append(out, h)
		}
	}
	return out, true
}

// All returns every cached HPA; nil before the cache has synced.
func (c *Cache) All() []*autoscalingv2.HorizontalPodAutoscaler {
	if c == nil || !c.informer.HasSynced() {
		return nil
	}
	objs := c.informer.GetIndexer().List()
	out := make([]*autoscalingv2.HorizontalPodAutoscaler, 0, len(objs))
	for _, o := range objs {
		if h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler); ok {
			out = append(out, h)
		}
	}
	return out
}
