// Package leaderelection runs a component's work under a Lease so only one
// replica acts at a time, with upstream VPA's flag names and defaults.
package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// ErrLeaseLost is returned by Run when the component stops being the leader
// before its context is cancelled.
var ErrLeaseLost = errors.New("leader election lost")

// Options configure leader election.
type Options struct {
	LeaderElect       bool
	LeaseDuration     time.Duration
	RenewDeadline     time.Duration
	RetryPeriod       time.Duration
	ResourceLock      string
	ResourceName      string
	ResourceNamespace string
}

// NewOptions returns upstream's defaults for a component whose lease is
// called leaseName (vpa-recommender-lease, vpa-updater).
func NewOptions(leaseName string) Options {
	return Options{
		LeaseDuration:     15 * time.Second,
		RenewDeadline:     10 * time.Second,
		RetryPeriod:       2 * time.Second,
		ResourceLock:      resourcelock.LeasesResourceLock,
		ResourceName:      leaseName,
		ResourceNamespace: "kube-system",
	}
}

// AddFlags registers the --leader-elect* flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Start a leader election client and gain leadership before executing the main loop. Enable this when running replicated components for high availability.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "The duration that non-leader candidates will wait after observing a leadership renewal until attempting to acquire leadership of a led but unrenewed leader slot.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "The interval between attempts by the acting master to renew a leadership slot before it stops leading. This must be less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "The duration the clients should wait between attempting acquisition and renewal of a leadership.")
	fs.StringVar(&o.ResourceLock, "leader-elect-resource-lock", o.ResourceLock, "The type of resource object that is used for locking during leader election. The only supported option is 'leases'.")
	fs.StringVar(&o.ResourceName, "leader-elect-resource-name", o.ResourceName, "The name of resource object that is used for locking during leader election.")
	fs.StringVar(&o.ResourceNamespace, "leader-elect-resource-namespace", o.ResourceNamespace, "The namespace of resource object that is used for locking during leader election.")
}

// Validate checks the options.
func (o *Options) Validate() error {
	if !o.LeaderElect {
		return nil
	}
	if o.ResourceLock != resourcelock.LeasesResourceLock {
		return fmt.Errorf("--leader-elect-resource-lock must be %q, got %q", resourcelock.LeasesResourceLock, o.ResourceLock)
	}
	if o.RenewDeadline >= o.LeaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline (%v) must be less than --leader-elect-lease-duration (%v)", o.RenewDeadline, o.LeaseDuration)
	}
	if o.RetryPeriod <= 0 || o.ResourceName == "" || o.ResourceNamespace == "" {
		return errors.New("--leader-elect-retry-period, --leader-elect-resource-name and --leader-elect-resource-namespace must be set")
	}
	return nil
}

// Run calls run directly when leader election is off. Otherwise it waits for
// the lease and calls run, in the caller's goroutine, with a context that is
// cancelled when the lease is lost; the lease is released once run returns or
// ctx is cancelled. Run returns only after run has returned: run's error, or
// ErrLeaseLost when leadership ended while ctx was still live.
func Run(ctx context.Context, o Options, client kubernetes.Interface, run func(context.Context) error) error {
	if !o.LeaderElect {
		return run(ctx)
	}
	logger := klog.FromContext(ctx)
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("reading the hostname for the leader election identity: %w", err)
	}
	id := host + "_" + uuid.NewString()
	lock, err := resourcelock.New(o.ResourceLock, o.ResourceNamespace, o.ResourceName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("creating the leader election lock: %w", err)
	}

	leading := make(chan context.Context, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				logger.Info("Acquired the leader lease", "lease", klog.KRef(o.ResourceNamespace, o.ResourceName), "identity", id)
				leading <- leaderCtx
			},
			OnStoppedLeading: func() {
				logger.Info("Stopped leading", "lease", klog.KRef(o.ResourceNamespace, o.ResourceName), "identity", id)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}

	electCtx, stopElecting := context.WithCancel(ctx)
	defer stopElecting()
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		le.Run(electCtx)
	}()

	select {
	case leaderCtx := <-leading:
		runErr := run(leaderCtx)
		lost := leaderCtx.Err() != nil && ctx.Err() == nil
		stopElecting()
		<-electorDone
		switch {
		case runErr != nil:
			return runErr
		case lost:
			return ErrLeaseLost
		default:
			return nil
		}
	case <-electorDone:
		if ctx.Err() != nil {
			return nil
		}
		return ErrLeaseLost
	}
}
