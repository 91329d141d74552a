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

// Package app wires the updater: clients, informers, the loop, leader
// election and the metrics and health server, run by pkg/component's
// runtime.
package app

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpalisters "github.com/openvpa/openvpa/apis/generated/listers/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/component"
	"github.com/openvpa/openvpa/pkg/events"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/leases"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/status"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/pkg/update"
	"github.com/openvpa/openvpa/updater/app/options"
	"github.com/openvpa/openvpa/updater/eviction"
	"github.com/openvpa/openvpa/updater/inplace"
	"github.com/openvpa/openvpa/updater/loop"
	"github.com/openvpa/openvpa/updater/scalepoint"
)

// Name is the updater's binary and logger name.
const Name = "vpa-updater"

// NewCommand returns the updater's command line.
func NewCommand() *component.Command[options.Config] {
	return &component.Command[options.Config]{Name: Name, Usage: "Usage: vpa-updater [flags]", Options: options.NewOptions(), Run: Run}
}

// Run runs the updater until ctx ends or leadership is lost.
func Run(ctx context.Context, c options.Config) error {
	o, restConfig := c.Options, c.REST
	logger := klog.FromContext(ctx)
	clients, err := kubeclient.NewClients(restConfig)
	if err != nil {
		return err
	}
	leaseClient, err := leases.New(restConfig)
	if err != nil {
		return err
	}
	clk := clock.RealClock{}
	ns := o.Namespaces.Filter().WatchNamespace()

	var caches informers.Set
	workloads := caches.AddWorkloads(clients, ns)
	resolver, err := target.NewForConfig(restConfig, workloads.Indexers, target.Options{})
	if err != nil {
		return err
	}
	limitRanges := caches.AddLimitRanges(clients, ns)
	pods := corelisters.NewPodLister(caches.Add(clients.Core, "pods", ns, &corev1.Pod{}, time.Hour, func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.AndSelectors(
			fields.OneTermNotEqualSelector("spec.nodeName", ""),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
		).String()
	}, target.StripManagedFields).GetIndexer())
	vpaLister := vpalisters.NewVerticalPodAutoscalerLister(caches.AddVPAs(clients, ns, nil).GetIndexer())

	evictions, err := eviction.NewClient(restConfig)
	if err != nil {
		return err
	}
	recorder, stopEvents := events.NewRecorder(ctx, clients, "vpa-updater")
	defer stopEvents()

	var nodes *nodefit.Cache
	if o.NodeFit {
		if nodes, err = nodefit.NewCache(clients.Core); err != nil {
			return err
		}
	}
	var quotas *quota.Cache
	if o.QuotaFit {
		quotas = quota.NewCache(clients.Core, ns)
	}
	var hpas *hpa.Cache
	if o.YieldToHPA || o.HPAScalePoint {
		if hpas, err = hpa.NewCache(restConfig, ns); err != nil {
			return err
		}
	}

	reg := healthserver.NewRegistry()
	metrics := loop.NewMetrics(reg)
	loopHealth := healthserver.NewLoopHealth(clk, o.UpdaterInterval)

	var scalePoints loop.ScalePointKeeper
	if o.HPAScalePoint {
		client, err := kubeclient.RESTClient(restConfig, autoscalingv2.SchemeGroupVersion, autoscalingv2.AddToScheme)
		if err != nil {
			return err
		}
		scalePoints = &scalepoint.Keeper{
			VPAs: func() ([]*vpav1.VerticalPodAutoscaler, error) { return vpaLister.List(labels.Everything()) },
			Selector: func(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (labels.Selector, error) {
				t, err := resolver.Resolve(ctx, vpa)
				if err != nil {
					return nil, err
				}
				return t.Selector, nil
			},
			Pods: func(namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
				return pods.Pods(namespace).List(sel)
			},
			HPAs:       hpas,
			Client:     scalepoint.Client{REST: client},
			Recorder:   recorder,
			Writes:     metrics.HPAScalePointWrites,
			Namespaces: o.Namespaces.Filter(),
		}
	}

	updater := loop.New(loop.Config{
		Priority: update.Thresholds{
			PodUpdateThreshold:         o.PodUpdateThreshold,
			PodLifetimeUpdateThreshold: o.PodLifetimeUpdateThreshold,
			EvictAfterOOMThreshold:     o.EvictAfterOOMThreshold,
		},
		Restriction: update.RestrictionConfig{
			MinReplicas:                 o.MinReplicas,
			EvictionTolerance:           o.EvictionTolerance,
			InPlaceSkipDisruptionBudget: o.InPlaceSkipDisruptionBudget,
		},
		EvictionRateLimit:            o.EvictionRateLimit,
		EvictionRateBurst:            o.EvictionRateBurst,
		UseAdmissionControllerStatus: o.UseAdmissionControllerStatus,
		DryRun:                       o.DryRun,
		PerVPAConfig:                 o.Features.Enabled(features.PerVPAConfig),
		InPlace:                      o.Features.Enabled(features.InPlace),
		StartupBoost:                 o.Features.Enabled(features.CPUStartupBoost),
		NativeSidecars:               o.Features.Enabled(features.NativeSidecar),
		BoostWorkers:                 o.ConcurrentCPUStartupBoostSyncs,
		Namespaces:                   o.Namespaces.Filter(),
	}, loop.Deps{
		VPAs:        listerFunc[*vpav1.VerticalPodAutoscaler](func() ([]*vpav1.VerticalPodAutoscaler, error) { return vpaLister.List(labels.Everything()) }),
		Pods:        listerFunc[*corev1.Pod](func() ([]*corev1.Pod, error) { return pods.List(labels.Everything()) }),
		LimitRanges: limitRanges,
		Resolver:    resolver,
		Counter:     update.WorkloadCounter{Workloads: workloads.Indexers},
		Status:      status.NewReader(leaseClient, c.AdmissionControllerLeaseNamespace, o.AdmissionControllerLeaseName, o.AdmissionControllerLeaseTimeout, clk),
		Evicter:     eviction.Evicter{API: evictions, Recorder: recorder},
		Resizer:     inplace.Client{Pods: func(namespace string) inplace.PodPatcher { return clients.Pods(namespace) }},
		Recorder:    recorder,
		Metrics:     metrics,
		Clock:       clk,
		Fit:         fitOf(nodes, quotas, yieldCache(hpas, o.YieldToHPA), workloads.Indexers),
		ScalePoints: scalePoints,
	})

	// Only the leader runs the loop (component.Runtime). Liveness holds the
	// loop to its interval only while it runs (a standby runs none).
	loopHealth.SetActive(!o.LeaderElection.LeaderElect)
	rt := &component.Runtime{
		Health: healthserver.Options{
			Address: o.Address, Registry: reg, Profiling: o.Profiling,
			Liveness: []healthserver.Check{{Name: "loop", Func: loopHealth.Check}},
		},
		Informers: updaterCaches{set: &caches, nodes: nodes, quotas: quotas, hpas: hpas},
		Election:  &component.Election{Options: o.LeaderElection, Leases: leaseClient, OnLeading: loopHealth.SetActive},
		Clock:     clk,
		Work: func(ctx context.Context) error {
			logger.Info("Updater started", "interval", o.UpdaterInterval, "dryRun", o.DryRun)
			return updater.Run(ctx, o.UpdaterInterval, loopHealth.MarkLoop)
		},
	}
	return rt.Run(ctx)
}

// fitOf returns what a VPA's pod must fit: the nodes it may use (nodes, nil
// for none), what the namespace's quotas leave (quotas, nil for none) with
// room for its target's surge, the resources left to an HPA (hpas, nil for
// none).
func fitOf(nodes *nodefit.Cache, quotas *quota.Cache, hpas *hpa.Cache, workloads target.Workloads) func(*vpav1.VerticalPodAutoscaler, *corev1.Pod) recommendation.Fit {
	if nodes == nil && quotas == nil && hpas == nil {
		return nil
	}
	return func(vpa *vpav1.VerticalPodAutoscaler, pod *corev1.Pod) recommendation.Fit {
		var f recommendation.Fit
		if nodes != nil {
			if rooms, ok := nodes.Rooms(nodefit.Of(&pod.Spec), nodefit.DaemonSetOf(pod)); ok {
				f.Nodes = rooms
			}
		}
		if quotas != nil {
			if f.Quota = quotas.Room(pod.Namespace); f.Quota != nil {
				f.Surge = target.SurgeOf(workloads, vpa)
			}
		}
		if hpas != nil {
			if in := hpas.InNamespace(pod.Namespace); len(in) > 0 {
				names := make([]string, len(pod.Spec.Containers))
				for i := range pod.Spec.Containers {
					names[i] = pod.Spec.Containers[i].Name
				}
				f.Yield = hpa.Yields(vpa, in, names)
			}
		}
		return f
	}
}

// yieldCache is hpas when the updater yields to HPAs (--yield-to-hpa),
// else nil: the cache may exist for --hpa-scale-point alone.
func yieldCache(hpas *hpa.Cache, yield bool) *hpa.Cache {
	if !yield {
		return nil
	}
	return hpas
}

// updaterCaches are the updater's informers. The quota and HPA caches start
// with them and are not waited for (see quota.Cache); the node fit cache
// (nil without --node-fit) is.
type updaterCaches struct {
	set    *informers.Set
	nodes  *nodefit.Cache
	quotas *quota.Cache
	hpas   *hpa.Cache
}

func (c updaterCaches) Start(ctx context.Context) {
	c.set.Start(ctx)
	if c.hpas != nil {
		c.hpas.Start(ctx)
	}
	if c.nodes != nil {
		c.nodes.Start(ctx)
	}
	if c.quotas != nil {
		c.quotas.Start(ctx)
	}
}

func (c updaterCaches) WaitForSync(ctx context.Context) error {
	if err := c.set.WaitForSync(ctx); err != nil {
		return err
	}
	if c.nodes != nil {
		return c.nodes.WaitForSync(ctx)
	}
	return nil
}

type listerFunc[T any] func() ([]T, error)

func (f listerFunc[T]) List() ([]T, error) { return f() }
