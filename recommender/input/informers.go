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

package input

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

// PodResync is upstream's resync period of the pod informer.
const PodResync = time.Hour

// Informers are the recommender's informers and listers, built on the lean
// clients (pkg/informers).
type Informers struct {
	// Targets reads the well-known controllers (for pkg/target).
	Targets target.IndexerWorkloads

	PodLister PodLister
	// VPALister reads the VPAs in the recommender's compact form.
	VPALister vpacache.Lister
	// LimitRanges returns a namespace's LimitRanges, merged.
	LimitRanges func(namespace string) limitrange.Merged
	// HPAs, when set before Start, caches the HorizontalPodAutoscalers for
	// the HPAConflict condition. It is started with the others but not
	// waited for (see hpa.Cache).
	HPAs *hpa.Cache
	// Nodes, when set before Start, caches the nodes and DaemonSet pods for
	// node fit (--node-fit). It is started and waited for with the others:
	// until it has synced, no recommendation would be capped.
	Nodes *nodefit.Cache
	// Quotas, when set before Start, caches the ResourceQuotas for the
	// ResourceQuotaConflict condition. It is started with the others but not
	// waited for (see quota.Cache).
	Quotas *quota.Cache

	set informers.Set
}

// NewInformers builds the informers of namespace ("" for all). The OOM
// observer, if not nil, is registered on the pod and event informers. With
// nativeSidecars, pods are cached with their native sidecars as containers
// (TrimPodWithSidecars). With a scope (may be nil), they keep only the
// namespaces it holds and list when it is Set (informers.Scope).
func NewInformers(c kubeclient.Clients, namespace string, oom *OOMObserver, nativeSidecars bool, scope *informers.Scope) (*Informers, error) {
	in := &Informers{set: informers.Set{Scope: scope}}
	trim := TrimPod
	if nativeSidecars {
		trim = TrimPodWithSidecars
	}
	in.Targets = in.set.AddWorkloads(c, namespace).Indexers
	pods := in.set.Add(c.Core, "pods", namespace, &corev1.Pod{}, PodResync, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermNotEqualSelector("status.phase", "Pending").String()
	}, trim)
	in.PodLister = NewPodLister(pods.GetIndexer())
	in.VPALister = vpacache.NewLister(in.set.AddVPAs(c, namespace, vpacache.Transform).GetIndexer())
	in.LimitRanges = in.set.AddLimitRanges(c, namespace)
	events := in.set.Add(c.Core, "events", namespace, &corev1.Event{}, 0, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.AndSelectors(
			fields.OneTermEqualSelector("reason", "Evicted"),
			fields.OneTermEqualSelector("involvedObject.kind", "Pod"),
		).String()
	}, target.StripManagedFields)
	if oom != nil {
		if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: oom.OnPodUpdate}); err != nil {
			return nil, err
		}
		if _, err := events.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: oom.OnEvent}); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Start starts every informer.
func (in *Informers) Start(ctx context.Context) {
	in.set.Start(ctx)
	if in.HPAs != nil {
		in.HPAs.Start(ctx)
	}
	if in.Nodes != nil {
		in.Nodes.Start(ctx)
	}
	if in.Quotas != nil {
		in.Quotas.Start(ctx)
	}
}

// Collector counts the cached objects by resource
// (vpa_recommender_cached_objects).
func (in *Informers) Collector() prometheus.Collector { return in.set.Collector("vpa_recommender") }

// WaitForSync blocks until every informer (the node fit cache's included)
// has synced, or ctx ends.
func (in *Informers) WaitForSync(ctx context.Context) error {
	if err := in.set.WaitForSync(ctx); err != nil {
		return err
	}
	if in.Nodes != nil {
		return in.Nodes.WaitForSync(ctx)
	}
	return nil
}
