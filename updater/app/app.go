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

// Package app wires the updater: flags, clients, informers, leader election,
// the metrics and health server, and the loop.
package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpalisters "github.com/openvpa/openvpa/apis/generated/listers/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/events"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/leases"
	"github.com/openvpa/openvpa/pkg/status"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/pkg/update"
	"github.com/openvpa/openvpa/updater/app/options"
	"github.com/openvpa/openvpa/updater/eviction"
	"github.com/openvpa/openvpa/updater/inplace"
	"github.com/openvpa/openvpa/updater/loop"
)

// Command is the updater command line.
type Command struct {
	Flags   *pflag.FlagSet
	Options *options.Options
}

// NewCommand returns the command with its flags registered.
func NewCommand() *Command {
	o := options.New()
	fs := pflag.NewFlagSet("vpa-updater", pflag.ContinueOnError)
	sections := o.FlagSections()
	sections.AddTo(fs)
	fs.Usage = func() { sections.Usage(fs.Output(), "Usage: vpa-updater [flags]") }
	return &Command{Flags: fs, Options: o}
}

// Execute parses args, validates them and runs the updater until ctx ends.
func (c *Command) Execute(ctx context.Context, args []string) error {
	if err := c.Flags.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if c.Flags.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", c.Flags.Arg(0))
	}
	if err := c.Options.Validate(); err != nil {
		return err
	}
	ctx, err := c.Options.Logging.Apply(ctx, "vpa-updater")
	if err != nil {
		return err
	}
	return Run(ctx, c.Options)
}

// Run runs the updater with the given options until ctx ends or leadership
// is lost.
func Run(ctx context.Context, o *options.Options) error {
	logger := klog.FromContext(ctx)
	restConfig, err := o.Kube.RESTConfig()
	if err != nil {
		return err
	}
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

	reg := healthserver.NewRegistry()
	metrics := loop.NewMetrics(reg)
	loopHealth := healthserver.NewLoopHealth(clk, o.UpdaterInterval)
	synced := make(chan struct{})
	ready := func() error {
		select {
		case <-synced:
			return nil
		default:
			return errors.New("informer caches not synced")
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
		Namespaces:                   o.Namespaces.Filter(),
	}, loop.Deps{
		VPAs:        listerFunc[*vpav1.VerticalPodAutoscaler](func() ([]*vpav1.VerticalPodAutoscaler, error) { return vpaLister.List(labels.Everything()) }),
		Pods:        listerFunc[*corev1.Pod](func() ([]*corev1.Pod, error) { return pods.List(labels.Everything()) }),
		LimitRanges: limitRanges,
		Resolver:    resolver,
		Counter:     update.WorkloadCounter{Workloads: workloads.Indexers},
		Status:      status.NewReader(leaseClient, o.LeaseNamespace(), o.AdmissionControllerLeaseName, o.AdmissionControllerLeaseTimeout, clk),
		Evicter:     eviction.Evicter{API: evictions, Recorder: recorder},
		Resizer:     inplace.Client{Pods: func(namespace string) inplace.PodPatcher { return clients.Pods(namespace) }},
		Recorder:    recorder,
		Metrics:     metrics,
		Clock:       clk,
	})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Every replica keeps its caches warm and answers probes; only the
	// leader runs the loop. Liveness holds the loop to its interval only
	// while leading (a standby runs none), and checks that a leader keeps
	// renewing its lease; readiness is the caches, never leadership.
	loopHealth.SetActive(!o.LeaderElection.LeaderElect)
	watchdog := leaderelection.NewWatchdog(clk, o.LeaderElection.LeaseDuration)
	election := o.LeaderElection
	election.Watchdog = watchdog
	setLeader, err := leaderelection.LeaderMetric(reg, election.ResourceName)
	if err != nil {
		return err
	}
	election.OnLeading = func(leading bool) {
		loopHealth.SetActive(leading)
		setLeader(leading)
	}
	serveErr := make(chan error, 1)
	go func() {
		serveErr <- healthserver.Serve(ctx, healthserver.Options{
			Address: o.Address, Registry: reg, Profiling: o.Profiling,
			Liveness:  []healthserver.Check{{Name: "loop", Func: loopHealth.Check}, {Name: "leader-election", Func: watchdog.Check}},
			Readiness: []healthserver.Check{{Name: "informers", Func: ready}},
		})
	}()
	caches.Start(ctx)
	syncErr := make(chan error, 1)
	go func() {
		if err := caches.WaitForSync(ctx); err != nil {
			syncErr <- err
			return
		}
		logger.Info("Informer caches synced")
		close(synced)
		syncErr <- nil
	}()
	runErr := make(chan error, 1)
	go func() {
		runErr <- leaderelection.Run(ctx, election, leaseClient, func(ctx context.Context) error {
			select {
			case <-synced:
			case <-ctx.Done():
				return nil
			}
			logger.Info("Updater started", "interval", o.UpdaterInterval, "dryRun", o.DryRun)
			return updater.Run(ctx, o.UpdaterInterval, loopHealth.MarkLoop)
		})
	}()
	for {
		select {
		case err := <-syncErr:
			if err == nil {
				syncErr = nil // synced; keep waiting for the others
				continue
			}
			if ctx.Err() != nil {
				continue // shutting down: the others report
			}
			cancel()
			<-runErr
			<-serveErr
			return err
		case err := <-serveErr:
			cancel()
			<-runErr
			return err
		case err := <-runErr:
			cancel()
			<-serveErr
			return err
		}
	}
}

type listerFunc[T any] func() ([]T, error)

func (f listerFunc[T]) List() ([]T, error) { return f() }
