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

// Package options holds the updater's command-line flags, with upstream's
// names and defaults.
package options

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"

	"github.com/openvpa/openvpa/pkg/component"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/status"
)

// Options are the updater's settings.
type Options struct {
	Kube           kubeclient.Options
	Namespaces     namespaces.Options
	LeaderElection leaderelection.Options
	Features       featuregate.MutableFeatureGate
	Logging        *component.Logging

	UpdaterInterval                 time.Duration
	MinReplicas                     int
	EvictionTolerance               float64
	EvictionRateLimit               float64
	EvictionRateBurst               int
	UseAdmissionControllerStatus    bool
	InPlaceSkipDisruptionBudget     bool
	PodUpdateThreshold              float64
	PodLifetimeUpdateThreshold      time.Duration
	EvictAfterOOMThreshold          time.Duration
	Address                         string
	Profiling                       bool
	DryRun                          bool
	AdmissionControllerLeaseName    string
	AdmissionControllerLeaseNS      string
	AdmissionControllerLeaseTimeout time.Duration
	ConcurrentCPUStartupBoostSyncs  int
	// NodeFit caps updates to the largest node a pod may use.
	NodeFit bool
	// QuotaFit keeps updates within what the namespaces' ResourceQuotas
	// leave.
	QuotaFit bool
	// YieldToHPA leaves a resource an HPA scales on by its utilization to
	// the HPA.
	YieldToHPA bool
	// HPAScalePoint keeps the scale point of the HPAs of VPAs annotated
	// openvpa.io/hpa-mode: scale-point (updater/scalepoint).
	HPAScalePoint bool
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Kube:                            kubeclient.NewOptions("vpa-updater"),
		LeaderElection:                  leaderelection.NewOptions("vpa-updater"),
		Features:                        features.NewGate(),
		Logging:                         component.NewLogging(),
		UpdaterInterval:                 time.Minute,
		MinReplicas:                     2,
		EvictionTolerance:               0.5,
		EvictionRateLimit:               -1,
		EvictionRateBurst:               1,
		UseAdmissionControllerStatus:    true,
		PodUpdateThreshold:              0.1,
		PodLifetimeUpdateThreshold:      12 * time.Hour,
		EvictAfterOOMThreshold:          10 * time.Minute,
		Address:                         ":8943",
		AdmissionControllerLeaseName:    status.DefaultLeaseName,
		AdmissionControllerLeaseTimeout: status.DefaultTimeout,
		ConcurrentCPUStartupBoostSyncs:  1,
		NodeFit:                         true,
		QuotaFit:                        true,
		YieldToHPA:                      true,
	}
}

// AddFlags registers every flag on fs, klog's included.
func (o *Options) AddFlags(fs *pflag.FlagSet) { o.FlagSections().AddTo(fs) }

// FlagSections registers every flag, in the sections --help shows.
func (o *Options) FlagSections() *component.Sections {
	s := &component.Sections{}
	fs := s.FlagSet("updater")
	fs.DurationVar(&o.UpdaterInterval, "updater-interval", o.UpdaterInterval, "How often updater should run")
	fs.IntVar(&o.MinReplicas, "min-replicas", o.MinReplicas, "Minimum number of replicas to perform update")
	fs.Float64Var(&o.EvictionTolerance, "eviction-tolerance", o.EvictionTolerance, "Fraction of replica count that can be evicted for update, if more than one pod can be evicted.")
	fs.Float64Var(&o.EvictionRateLimit, "eviction-rate-limit", o.EvictionRateLimit, "Number of pods that can be evicted per seconds. A rate limit set to 0 or -1 will disable the rate limiter.")
	fs.IntVar(&o.EvictionRateBurst, "eviction-rate-burst", o.EvictionRateBurst, "Burst of pods that can be evicted.")
	fs.BoolVar(&o.UseAdmissionControllerStatus, "use-admission-controller-status", o.UseAdmissionControllerStatus, "If true, updater will only evict pods when admission controller status is valid.")
	fs.BoolVar(&o.InPlaceSkipDisruptionBudget, "in-place-skip-disruption-budget", o.InPlaceSkipDisruptionBudget, "[BETA] If true, in-place updates that need no container restart skip the disruption budget checks (minReplicas, eviction tolerance).")
	fs.Float64Var(&o.PodUpdateThreshold, "pod-update-threshold", o.PodUpdateThreshold, "Ignore updates that have priority lower than the value of this flag")
	fs.DurationVar(&o.PodLifetimeUpdateThreshold, "in-recommendation-bounds-eviction-lifetime-threshold", o.PodLifetimeUpdateThreshold, "Pods that live for at least that long can be evicted even if their request is within the [MinRecommended...MaxRecommended] range")
	fs.DurationVar(&o.EvictAfterOOMThreshold, "evict-after-oom-threshold", o.EvictAfterOOMThreshold, "The default duration to evict pods after OOM if they have been running for less than this threshold")
	fs.StringVar(&o.Address, "address", o.Address, "The address to expose Prometheus metrics and health checks.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Is debug/pprof endpoint enabled")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "Record every update decision as events, logs and metrics without evicting or resizing any pod.")
	fs.BoolVar(&o.NodeFit, "node-fit", o.NodeFit, "Cap the requests an eviction or resize gives a pod so that it fits the largest node it may be scheduled on, as the admission controller's --node-fit does. Needs list and watch on nodes and pods; the updater is ready once both are cached. false gives upstream's updates")
	fs.BoolVar(&o.YieldToHPA, "yield-to-hpa", o.YieldToHPA, "Leave a resource that a HorizontalPodAutoscaler scales the VPA's target on by its utilization to the HPA, as the admission controller's --yield-to-hpa does: updates neither set it nor are made for it. Needs list and watch on horizontalpodautoscalers; until they are cached, nothing is left out. false sets every controlled resource, as upstream")
	fs.BoolVar(&o.HPAScalePoint, "hpa-scale-point", o.HPAScalePoint, "Keep the scale point of a HorizontalPodAutoscaler that scales the target of a VPA annotated openvpa.io/hpa-mode: scale-point on a resource's utilization: record its target on the HPA (annotation openvpa.io/scale-point), then scale the target with the pods' requests, so the VPA sets the resource and the HPA computes the same replicas; the original target is restored when the VPA leaves the mode. Skipped while the admission controller's status Lease is stale. Needs get, list, watch and update on horizontalpodautoscalers (deploy/components/hpa-scale-point)")
	fs.BoolVar(&o.QuotaFit, "resource-quota-fit", o.QuotaFit, "Cap the increase an update gives a pod to what the namespace's ResourceQuotas leave, as the admission controller's --resource-quota-fit does, and neither evict a pod whose replacement the quotas would refuse (the evicted pod is still charged while it terminates) nor resize one whose increase they would refuse; event ResourceQuotaConflict on the VPA. Needs list and watch on resourcequotas; without them nothing is checked")
	fs.StringVar(&o.AdmissionControllerLeaseName, "admission-controller-status-lease-name", o.AdmissionControllerLeaseName, "The name of the lease the admission controller renews to report its status.")
	fs.StringVar(&o.AdmissionControllerLeaseNS, "admission-controller-status-lease-namespace", o.AdmissionControllerLeaseNS, "The namespace of the admission controller status lease; empty means $NAMESPACE, else kube-system.")
	fs.DurationVar(&o.AdmissionControllerLeaseTimeout, "admission-controller-status-lease-timeout", o.AdmissionControllerLeaseTimeout, "How long after its last renewal the admission controller status lease counts as valid.")
	fs.IntVar(&o.ConcurrentCPUStartupBoostSyncs, "concurrent-cpu-startup-boost-syncs", o.ConcurrentCPUStartupBoostSyncs, "The number of CPU startup boosts ended in place concurrently (CPUStartupBoost feature gate). Boosts are ended in each updater loop.")
	o.Kube.AddFlags(s.FlagSet("kubernetes client"))
	o.Namespaces.AddFlags(s.FlagSet("namespaces"))
	o.LeaderElection.AddFlags(s.FlagSet("leader election"))
	features.AddFlag(s.FlagSet("feature gates"), o.Features)
	s.AddLogging(o.Logging)
	return s
}

// Config is what the updater runs with: the validated options and what they
// resolve to.
type Config struct {
	Options *Options
	// REST is the API server's client configuration (--kubeconfig, the
	// client's QPS and burst).
	REST *rest.Config
	// AdmissionControllerLeaseNamespace is the admission controller status
	// Lease's namespace (LeaseNamespace).
	AdmissionControllerLeaseNamespace string
}

// Config resolves the validated options.
func (o *Options) Config() (Config, error) {
	cfg, err := o.Kube.RESTConfig()
	if err != nil {
		return Config{}, err
	}
	return Config{Options: o, REST: cfg, AdmissionControllerLeaseNamespace: o.LeaseNamespace()}, nil
}

// LeaseNamespace resolves the admission controller lease namespace.
func (o *Options) LeaseNamespace() string {
	if o.AdmissionControllerLeaseNS != "" {
		return o.AdmissionControllerLeaseNS
	}
	if ns := os.Getenv("NAMESPACE"); ns != "" {
		return ns
	}
	return status.DefaultNamespace
}

// Validate reports every invalid option at once.
func (o *Options) Validate() []error {
	var errs []error
	for _, err := range []error{o.Kube.Validate(), o.Namespaces.Validate(), o.LeaderElection.Validate()} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, o.Logging.Validate()...)
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(o.UpdaterInterval <= 0, "--updater-interval must be positive, got %v", o.UpdaterInterval)
	check(o.MinReplicas < 1, "--min-replicas must be at least 1, got %d", o.MinReplicas)
	check(o.EvictionTolerance < 0 || o.EvictionTolerance > 1, "--eviction-tolerance must be within [0, 1], got %v", o.EvictionTolerance)
	check(o.EvictionRateLimit > 0 && o.EvictionRateBurst < 1, "--eviction-rate-burst must be at least 1 with a rate limit, got %d", o.EvictionRateBurst)
	check(o.PodUpdateThreshold < 0, "--pod-update-threshold must not be negative, got %v", o.PodUpdateThreshold)
	check(o.PodLifetimeUpdateThreshold < 0 || o.EvictAfterOOMThreshold < 0, "--in-recommendation-bounds-eviction-lifetime-threshold and --evict-after-oom-threshold must not be negative")
	check(o.ConcurrentCPUStartupBoostSyncs <= 0, "--concurrent-cpu-startup-boost-syncs must be positive, got %d", o.ConcurrentCPUStartupBoostSyncs)
	check(o.AdmissionControllerLeaseTimeout <= 0, "--admission-controller-status-lease-timeout must be positive, got %v", o.AdmissionControllerLeaseTimeout)
	return errs
}
