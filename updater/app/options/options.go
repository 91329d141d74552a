// Package options holds the updater's command-line flags, with upstream's
// names and defaults.
package options

import (
	goflag "flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

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

	UpdaterInterval                time.Duration
	MinReplicas                    int
	EvictionTolerance              float64
	EvictionRateLimit              float64
	EvictionRateBurst              int
	UseAdmissionControllerStatus   bool
	InPlaceSkipDisruptionBudget    bool
	PodUpdateThreshold             float64
	PodLifetimeUpdateThreshold     time.Duration
	EvictAfterOOMThreshold         time.Duration
	Address                        string
	Profiling                      bool
	DryRun                         bool
	AdmissionControllerLeaseName   string
	AdmissionControllerLeaseNS     string
	AdmissionControllerLeaseTimout time.Duration
}

// New returns the defaults.
func New() *Options {
	return &Options{
		Kube:                           kubeclient.NewOptions("vpa-updater"),
		LeaderElection:                 leaderelection.NewOptions("vpa-updater"),
		Features:                       features.NewGate(),
		UpdaterInterval:                time.Minute,
		MinReplicas:                    2,
		EvictionTolerance:              0.5,
		EvictionRateLimit:              -1,
		EvictionRateBurst:              1,
		UseAdmissionControllerStatus:   true,
		PodUpdateThreshold:             0.1,
		PodLifetimeUpdateThreshold:     12 * time.Hour,
		EvictAfterOOMThreshold:         10 * time.Minute,
		Address:                        ":8943",
		AdmissionControllerLeaseName:   status.DefaultLeaseName,
		AdmissionControllerLeaseTimout: status.DefaultTimeout,
	}
}

// AddFlags registers every flag on fs, klog's included.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Kube.AddFlags(fs)
	o.Namespaces.AddFlags(fs)
	o.LeaderElection.AddFlags(fs)
	features.AddFlag(fs, o.Features)
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
	fs.StringVar(&o.AdmissionControllerLeaseName, "admission-controller-status-lease-name", o.AdmissionControllerLeaseName, "The name of the lease the admission controller renews to report its status.")
	fs.StringVar(&o.AdmissionControllerLeaseNS, "admission-controller-status-lease-namespace", o.AdmissionControllerLeaseNS, "The namespace of the admission controller status lease; empty means $NAMESPACE, else kube-system.")
	fs.DurationVar(&o.AdmissionControllerLeaseTimout, "admission-controller-status-lease-timeout", o.AdmissionControllerLeaseTimout, "How long after its last renewal the admission controller status lease counts as valid.")

	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
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

// Validate checks the options.
func (o *Options) Validate() error {
	if err := o.Kube.Validate(); err != nil {
		return err
	}
	if err := o.Namespaces.Validate(); err != nil {
		return err
	}
	if err := o.LeaderElection.Validate(); err != nil {
		return err
	}
	switch {
	case o.UpdaterInterval <= 0:
		return fmt.Errorf("--updater-interval must be positive, got %v", o.UpdaterInterval)
	case o.MinReplicas < 1:
		return fmt.Errorf("--min-replicas must be at least 1, got %d", o.MinReplicas)
	case o.EvictionTolerance < 0 || o.EvictionTolerance > 1:
		return fmt.Errorf("--eviction-tolerance must be within [0, 1], got %v", o.EvictionTolerance)
	case o.EvictionRateLimit > 0 && o.EvictionRateBurst < 1:
		return fmt.Errorf("--eviction-rate-burst must be at least 1 with a rate limit, got %d", o.EvictionRateBurst)
	case o.PodUpdateThreshold < 0:
		return fmt.Errorf("--pod-update-threshold must not be negative, got %v", o.PodUpdateThreshold)
	case o.PodLifetimeUpdateThreshold < 0 || o.EvictAfterOOMThreshold < 0:
		return fmt.Errorf("--in-recommendation-bounds-eviction-lifetime-threshold and --evict-after-oom-threshold must not be negative")
	case o.AdmissionControllerLeaseTimout <= 0:
		return fmt.Errorf("--admission-controller-status-lease-timeout must be positive, got %v", o.AdmissionControllerLeaseTimout)
	}
	return nil
}
