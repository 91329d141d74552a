// Package app wires the updater: flags, clients, informers, leader election,
// the metrics and health server, and the loop.
package app

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	vpainformers "github.com/openvpa/openvpa/apis/generated/informers/externalversions"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/leases"
	"github.com/openvpa/openvpa/pkg/priority"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/status"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/pkg/target/targetinformers"
	"github.com/openvpa/openvpa/updater/app/options"
	"github.com/openvpa/openvpa/updater/eviction"
	"github.com/openvpa/openvpa/updater/inplace"
	"github.com/openvpa/openvpa/updater/loop"
	"github.com/openvpa/openvpa/updater/restriction"
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
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("building the Kubernetes client: %w", err)
	}
	vpas, err := vpaclient.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("building the VPA client: %w", err)
	}
	leaseClient, err := leases.New(restConfig)
	if err != nil {
		return err
	}
	clk := clock.RealClock{}
	ns := o.Namespaces.Filter().WatchNamespace()

	coreFactory := informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute, informers.WithNamespace(ns))
	resolver, err := target.NewForConfig(restConfig, targetinformers.Listers(coreFactory), target.Options{})
	if err != nil {
		return err
	}
	limitRanges := coreFactory.Core().V1().LimitRanges().Lister()
	counter := replicaCounter{
		rs: coreFactory.Apps().V1().ReplicaSets().Lister(),
		ss: coreFactory.Apps().V1().StatefulSets().Lister(),
		ds: coreFactory.Apps().V1().DaemonSets().Lister(),
		rc: coreFactory.Core().V1().ReplicationControllers().Lister(),
	}
	podFactory := informers.NewSharedInformerFactoryWithOptions(kube, time.Hour, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.AndSelectors(
				fields.OneTermNotEqualSelector("spec.nodeName", ""),
				fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
				fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
			).String()
		}))
	pods := podFactory.Core().V1().Pods().Lister()
	vpaFactory := vpainformers.NewSharedInformerFactoryWithOptions(vpas, 10*time.Minute, vpainformers.WithNamespace(ns))
	vpaLister := vpaFactory.Autoscaling().V1().VerticalPodAutoscalers().Lister()
	// Register the informers before the factories start.
	coreFactory.Core().V1().LimitRanges().Informer()
	coreFactory.Apps().V1().DaemonSets().Informer()
	podFactory.Core().V1().Pods().Informer()
	vpaFactory.Autoscaling().V1().VerticalPodAutoscalers().Informer()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(vpav1.AddToScheme(scheme))
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "vpa-updater"})

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
		Priority: priority.Config{
			PodUpdateThreshold:         o.PodUpdateThreshold,
			PodLifetimeUpdateThreshold: o.PodLifetimeUpdateThreshold,
			EvictAfterOOMThreshold:     o.EvictAfterOOMThreshold,
		},
		Restriction: restriction.Config{
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
		Namespaces:                   o.Namespaces.Filter(),
	}, loop.Deps{
		VPAs: listerFunc[*vpav1.VerticalPodAutoscaler](func() ([]*vpav1.VerticalPodAutoscaler, error) { return vpaLister.List(labels.Everything()) }),
		Pods: listerFunc[*corev1.Pod](func() ([]*corev1.Pod, error) { return pods.List(labels.Everything()) }),
		LimitRanges: func(namespace string) recommendation.LimitRanges {
			items, err := limitRanges.LimitRanges(namespace).List(labels.Everything())
			if err != nil {
				return recommendation.LimitRanges{}
			}
			return recommendation.MergeLimitRanges(items)
		},
		Resolver: resolver,
		Counter:  counter,
		Status:   status.NewReader(leaseClient, o.LeaseNamespace(), o.AdmissionControllerLeaseName, o.AdmissionControllerLeaseTimeout, clk),
		Evicter:  eviction.Evicter{Kube: kube, Recorder: recorder},
		Resizer:  inplace.Client{Kube: kube},
		Recorder: recorder,
		Metrics:  metrics,
		Clock:    clk,
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
	coreFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	vpaFactory.Start(ctx.Done())
	syncErr := make(chan error, 1)
	go func() {
		for _, f := range []interface {
			WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool
		}{coreFactory, podFactory} {
			for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
				if !ok {
					syncErr <- fmt.Errorf("cache for %v did not sync", typ)
					return
				}
			}
		}
		for typ, ok := range vpaFactory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				syncErr <- fmt.Errorf("cache for %v did not sync", typ)
				return
			}
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

// replicaCounter reads configured replicas from the informers, as upstream:
// spec.replicas of ReplicaSets, StatefulSets and ReplicationControllers,
// status.numberReady of DaemonSets, and the live pods of a Job.
type replicaCounter struct {
	rs appslisters.ReplicaSetLister
	ss appslisters.StatefulSetLister
	ds appslisters.DaemonSetLister
	rc corelisters.ReplicationControllerLister
}

func (c replicaCounter) ConfiguredReplicas(namespace string, owner metav1.OwnerReference, livePods int) (int, error) {
	var replicas *int32
	switch owner.Kind {
	case "ReplicaSet":
		rs, err := c.rs.ReplicaSets(namespace).Get(owner.Name)
		if err != nil {
			return 0, err
		}
		replicas = rs.Spec.Replicas
	case "StatefulSet":
		ss, err := c.ss.StatefulSets(namespace).Get(owner.Name)
		if err != nil {
			return 0, err
		}
		replicas = ss.Spec.Replicas
	case "ReplicationController":
		rc, err := c.rc.ReplicationControllers(namespace).Get(owner.Name)
		if err != nil {
			return 0, err
		}
		replicas = rc.Spec.Replicas
	case "DaemonSet":
		ds, err := c.ds.DaemonSets(namespace).Get(owner.Name)
		if err != nil {
			return 0, err
		}
		return int(ds.Status.NumberReady), nil
	case "Job":
		return livePods, nil
	default:
		return 0, fmt.Errorf("unsupported controller kind %s", owner.Kind)
	}
	if replicas == nil || *replicas == 0 {
		return 0, fmt.Errorf("%s %s/%s has no replicas configured", owner.Kind, namespace, owner.Name)
	}
	return int(*replicas), nil
}
