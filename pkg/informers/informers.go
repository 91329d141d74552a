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

// Package informers builds the components' shared informers on the lean REST
// clients of pkg/kubeclient, with the transforms that keep their caches
// small. It replaces client-go's shared informer factory, which links every
// API group's informer, lister and typed client into a binary that imports it.
package informers

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/target"
)

// DefaultResync is upstream's resync period of the controller, VPA and
// LimitRange informers.
const DefaultResync = 10 * time.Minute

// Set is a group of informers started and synced together. Add every
// informer before Start.
type Set struct {
	// Scope, when set before the first Add, keeps only the objects of the
	// namespaces in scope (see Scope). Informers added to a scoped Set do
	// not resync.
	Scope *Scope

	all       []Informer
	resources []string // of all
	shared    []cache.SharedIndexInformer
}

// Collector returns a collector of the number of objects each informer of
// the set caches, as <metricNamespace>_cached_objects{resource}.
func (s *Set) Collector(metricNamespace string) prometheus.Collector {
	return &setCollector{set: s, desc: prometheus.NewDesc(metricNamespace+"_cached_objects",
		"Objects in the informer caches, by resource.", []string{"resource"}, nil)}
}

type setCollector struct {
	set  *Set
	desc *prometheus.Desc
}

func (c *setCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *setCollector) Collect(ch chan<- prometheus.Metric) {
	for i, inf := range c.set.all {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(len(inf.GetIndexer().ListKeys())), c.set.resources[i])
	}
}

// Add creates an informer over client's resource in namespace ("" for all),
// indexed by namespace. tweak (may be nil) narrows its lists and watches;
// transform (may be nil) trims each object before it is cached.
func (s *Set) Add(client rest.Interface, resource, namespace string, obj runtime.Object, resync time.Duration,
	tweak func(*metav1.ListOptions), transform cache.TransformFunc) Informer {
	if tweak == nil {
		tweak = func(*metav1.ListOptions) {}
	}
	lw := cache.NewFilteredListWatchFromClient(client, resource, namespace, tweak)
	if s.Scope != nil {
		inf := newScopedInformer(lw, obj, resource, transform)
		s.Scope.add(inf)
		s.all = append(s.all, inf)
		s.resources = append(s.resources, resource)
		return inf
	}
	inf := cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if transform != nil {
		_ = inf.SetTransform(transform) // cannot fail before the informer starts
	}
	s.all = append(s.all, inf)
	s.resources = append(s.resources, resource)
	s.shared = append(s.shared, inf)
	return inf
}

// Start starts every informer; they stop when ctx ends. A scoped Set's
// informers list once the Scope has been Set.
func (s *Set) Start(ctx context.Context) {
	for _, inf := range s.shared {
		go inf.RunWithContext(ctx)
	}
	if s.Scope != nil {
		s.Scope.Start(ctx)
	}
}

// WaitForSync blocks until every informer has synced, or ctx ends.
func (s *Set) WaitForSync(ctx context.Context) error {
	synced := make([]cache.InformerSynced, len(s.all))
	for i, inf := range s.all {
		synced[i] = inf.HasSynced
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errors.New("informer caches did not sync")
	}
	return nil
}

// Workloads are the informers of the well-known controllers, trimmed to
// target.Workload.
type Workloads struct {
	// Indexers reads them, for target.NewResolver.
	Indexers target.IndexerWorkloads
	// Informers are the same informers by kind, for event handlers.
	Informers map[string]Informer
}

// AddWorkloads adds an informer per well-known controller kind.
func (s *Set) AddWorkloads(c kubeclient.Clients, namespace string) Workloads {
	kinds := []struct {
		kind, resource string
		client         rest.Interface
		obj            runtime.Object
	}{
		{target.KindDeployment, "deployments", c.Apps, &appsv1.Deployment{}},
		{target.KindReplicaSet, "replicasets", c.Apps, &appsv1.ReplicaSet{}},
		{target.KindStatefulSet, "statefulsets", c.Apps, &appsv1.StatefulSet{}},
		{target.KindDaemonSet, "daemonsets", c.Apps, &appsv1.DaemonSet{}},
		{target.KindJob, "jobs", c.Batch, &batchv1.Job{}},
		{target.KindCronJob, "cronjobs", c.Batch, &batchv1.CronJob{}},
		{target.KindReplicationController, "replicationcontrollers", c.Core, &corev1.ReplicationController{}},
	}
	w := Workloads{Indexers: target.IndexerWorkloads{}, Informers: map[string]Informer{}}
	for _, k := range kinds {
		inf := s.Add(k.client, k.resource, namespace, k.obj, DefaultResync, nil, target.TrimWorkload)
		w.Indexers[k.kind] = inf.GetIndexer()
		w.Informers[k.kind] = inf
	}
	return w
}

// AddVPAs adds the VerticalPodAutoscaler informer. transform trims each
// object before it is cached; nil drops managed fields.
func (s *Set) AddVPAs(c kubeclient.Clients, namespace string, transform cache.TransformFunc) Informer {
	if transform == nil {
		transform = target.StripManagedFields
	}
	return s.Add(c.VPA.RESTClient(), "verticalpodautoscalers", namespace, &vpav1.VerticalPodAutoscaler{}, DefaultResync, nil, transform)
}

// AddLimitRanges adds the LimitRange informer and returns a reader of a
// namespace's LimitRanges, merged (limitrange.Merge).
func (s *Set) AddLimitRanges(c kubeclient.Clients, namespace string) func(namespace string) limitrange.Merged {
	idx := s.Add(c.Core, "limitranges", namespace, &corev1.LimitRange{}, DefaultResync, nil, target.StripManagedFields).GetIndexer()
	return func(ns string) limitrange.Merged {
		objs, err := idx.ByIndex(cache.NamespaceIndex, ns)
		if err != nil || len(objs) == 0 {
			return limitrange.Merged{}
		}
		items := make([]*corev1.LimitRange, 0, len(objs))
		for _, o := range objs {
			if lr, ok := o.(*corev1.LimitRange); ok {
				items = append(items, lr)
			}
		}
		return limitrange.Merge(items)
	}
}
