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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
)

// trimNamespace keeps a namespace's name, labels and deletion.
func trimNamespace(obj any) (any, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion, Labels: ns.Labels, DeletionTimestamp: ns.DeletionTimestamp,
	}}, nil
}

// enqueueAll queues every namespace the recommender handles.
func (c *Controller) enqueueAll() {
	for _, ns := range c.nsIdx.ListKeys() {
		if c.o.Namespaces.Allows(ns) {
			c.queue.Add(ns)
		}
	}
}

func (c *Controller) enqueueNamespaceOf(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		ns, _, err := cache.SplitMetaNamespaceKey(t.Key)
		if err == nil && c.o.Namespaces.Allows(ns) {
			c.queue.Add(ns)
		}
		return
	}
	if m, ok := obj.(metav1.Object); ok && c.o.Namespaces.Allows(m.GetNamespace()) {
		c.queue.Add(m.GetNamespace())
	}
}

func (c *Controller) vpaHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			c.seen(obj, false)
			c.enqueueNamespaceOf(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			c.seen(newObj, false)
			o, n := oldObj.(*vpav1.VerticalPodAutoscaler), newObj.(*vpav1.VerticalPodAutoscaler)
			// Status writes (every recommender loop) change neither.
			if o.Generation != n.Generation || !labels.Equals(o.Labels, n.Labels) || len(o.OwnerReferences) != len(n.OwnerReferences) {
				c.enqueueNamespaceOf(newObj)
			}
		},
		DeleteFunc: func(obj any) {
			c.seen(obj, true)
			c.enqueueNamespaceOf(obj)
		},
	}
}

func (c *Controller) policyHandler() cache.ResourceEventHandler {
	changed := func(name string) {
		c.enqueueAll()
		c.statuses.Add(name)
		select {
		case c.kinds <- struct{}{}:
		default:
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*policyv1alpha1.VerticalPodAutoscalerPolicy); ok {
				changed(p.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*policyv1alpha1.VerticalPodAutoscalerPolicy), newObj.(*policyv1alpha1.VerticalPodAutoscalerPolicy)
			if o.Generation != n.Generation {
				changed(n.Name)
			}
		},
		DeleteFunc: func(any) {
			c.enqueueAll()
		},
	}
}

func (c *Controller) namespaceHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok && c.o.Namespaces.Allows(ns.Name) {
				c.queue.Add(ns.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Namespace), newObj.(*corev1.Namespace)
			if !labels.Equals(o.Labels, n.Labels) && c.o.Namespaces.Allows(n.Name) {
				c.queue.Add(n.Name)
			}
		},
		DeleteFunc: func(obj any) {
			ns, ok := obj.(*corev1.Namespace)
			if !ok {
				if t, tok := obj.(cache.DeletedFinalStateUnknown); tok {
					ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.Key}}
				} else {
					return
				}
			}
			c.mu.Lock()
			old := c.results[ns.Name]
			delete(c.results, ns.Name)
			c.mu.Unlock()
			if old != nil {
				for p := range old.policies {
					c.statuses.AddAfter(p, time.Second)
				}
			}
		},
	}
}

func (c *Controller) workloadHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueNamespaceOf,
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*Workload), newObj.(*Workload)
			if o.Owned != n.Owned || o.UID != n.UID || !labels.Equals(o.Labels, n.Labels) {
				c.enqueueNamespaceOf(newObj)
			}
		},
		DeleteFunc: c.enqueueNamespaceOf,
	}
}

// seen clears the pending write of a VPA the cache now has.
func (c *Controller) seen(obj any, deleted bool) {
	var key string
	var rv string
	switch v := obj.(type) {
	case *vpav1.VerticalPodAutoscaler:
		key, rv = v.Namespace+"/"+v.Name, v.ResourceVersion
	case cache.DeletedFinalStateUnknown:
		key = v.Key
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[key]
	if !ok {
		return
	}
	if deleted == p.deleted && (deleted || p.resourceVersion == "" || p.resourceVersion == rv) {
		delete(c.pending, key)
	}
}

// markPending records a write until the cache has it. The cache may have
// it already: the watch event can arrive before the write returns.
func (c *Controller) markPending(key string, p pendingWrite) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.at = c.clock.Now()
	c.pending[key] = p
	// The store is updated before the handlers run: a write whose event was
	// handled before it was recorded is in the store now.
	obj, exists, err := c.vpas.GetByKey(key)
	if err != nil {
		return
	}
	if p.deleted && !exists {
		delete(c.pending, key)
	}
	if v, ok := obj.(*vpav1.VerticalPodAutoscaler); ok && !p.deleted && v.ResourceVersion == p.resourceVersion {
		delete(c.pending, key)
	}
}

// isPending reports whether a write to key is not yet in the cache.
func (c *Controller) isPending(key string) bool {
	p, ok := c.pending[key]
	if !ok {
		return false
	}
	if c.clock.Since(p.at) > pendingFor {
		delete(c.pending, key)
		return false
	}
	return true
}
