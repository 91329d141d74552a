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

// Package app wires the admission controller: clients, informers, the
// HTTPS webhook server, webhook registration, the status Lease and the
// metrics and health server, run by pkg/component's runtime.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/admission-controller/app/options"
	"github.com/openvpa/openvpa/admission-controller/endpoints"
	"github.com/openvpa/openvpa/admission-controller/pod"
	"github.com/openvpa/openvpa/admission-controller/vpa"
	"github.com/openvpa/openvpa/admission-controller/webhook"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/component"
	"github.com/openvpa/openvpa/pkg/events"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/leases"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/status"
	"github.com/openvpa/openvpa/pkg/target"
)

// Name is the admission controller's binary and logger name.
const Name = "vpa-admission-controller"

// NewCommand returns the admission controller's command line.
func NewCommand() *component.Command[options.Config] {
	return &component.Command[options.Config]{Name: Name, Usage: "Usage: vpa-admission-controller [flags]", Options: options.NewOptions(), Run: Run}
}

// limitRanges adapts a reader of the LimitRange cache to pod.LimitRangeReader.
type limitRanges func(namespace string) limitrange.Merged

func (l limitRanges) LimitRanges(namespace string) (limitrange.Merged, error) {
	return l(namespace), nil
}

// vpasIn reads a namespace's VPAs from the VPA informer's indexer.
func vpasIn(idx cache.Indexer) func(namespace string) []*vpav1.VerticalPodAutoscaler {
	return func(namespace string) []*vpav1.VerticalPodAutoscaler {
		objs, err := idx.ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil
		}
		out := make([]*vpav1.VerticalPodAutoscaler, 0, len(objs))
		for _, o := range objs {
			if v, ok := o.(*vpav1.VerticalPodAutoscaler); ok {
				out = append(out, v)
			}
		}
		return out
	}
}

// Run runs the admission controller until ctx ends. It elects no leader:
// every replica serves the webhook, registers it and renews the status
// Lease.
func Run(ctx context.Context, c options.Config) error {
	o := c.Options
	logger := klog.FromContext(ctx)

	if o.SelfSignedCertDir != "" {
		hosts := []string{"127.0.0.1", "localhost", o.WebhookService + "." + o.Namespace + ".svc"}
		if o.SelfSignedCertHosts != "" {
			hosts = strings.Split(o.SelfSignedCertHosts, ",")
		}
		if err := webhook.GenerateSelfSigned(o.SelfSignedCertDir, hosts, 365*24*time.Hour); err != nil {
			return fmt.Errorf("generating self-signed certificates: %w", err)
		}
		o.ClientCAFile = filepath.Join(o.SelfSignedCertDir, webhook.CACertFile)
		o.TLSCertFile = filepath.Join(o.SelfSignedCertDir, webhook.ServerCertFile)
		o.TLSPrivateKey = filepath.Join(o.SelfSignedCertDir, webhook.ServerKeyFile)
		logger.Info("Generated a self-signed CA and serving certificate", "dir", o.SelfSignedCertDir, "hosts", hosts)
	}
	certs, err := webhook.NewCertWatcher(o.TLSCertFile, o.TLSPrivateKey, o.ClientCAFile)
	if err != nil {
		return err
	}
	tlsConfig, err := webhook.ServerTLSConfig(o.TLSOptions(), certs.GetCertificate)
	if err != nil {
		return err
	}

	restConfig := c.REST
	clients, err := kubeclient.NewClients(restConfig)
	if err != nil {
		return err
	}
	filter := o.Namespaces.Filter()
	var caches informers.Set
	vpaInformer := caches.AddVPAs(clients, filter.WatchNamespace(), nil)
	if err := vpaInformer.AddIndexers(cache.Indexers{pod.TargetRefIndex: pod.TargetRefIndexFunc}); err != nil {
		return err
	}
	workloads := caches.AddWorkloads(clients, filter.WatchNamespace())
	resolver, err := target.NewForConfig(restConfig, workloads.Indexers, target.Options{})
	if err != nil {
		return err
	}
	lrs := caches.AddLimitRanges(clients, filter.WatchNamespace())

	registry := healthserver.NewRegistry()
	metrics := webhook.NewMetrics(registry)
	registry.MustRegister(certs.ExpiryCollector())
	finder := pod.NewFinder(vpaInformer.GetIndexer(), resolver, filter.Allows)
	if err := finder.CacheSelectorsOf(workloads.Informers); err != nil {
		return err
	}
	recorder, stopEvents := events.NewRecorder(ctx, clients, "vpa-admission-controller")
	defer stopEvents()
	handler := pod.NewHandler(finder, limitRanges(lrs)).WithRecorder(recorder).WithConflictCounter(metrics.LimitRangeConflict)
	if o.Gates.Enabled(features.CPUStartupBoost) {
		finder.WithStartupBoost()
		handler.WithStartupBoost(c.MaxCPUBoost)
	}
	if o.Gates.Enabled(features.NativeSidecar) {
		handler.WithNativeSidecars()
	}
	hpas, err := hpa.NewCache(restConfig, filter.WatchNamespace())
	if err != nil {
		return err
	}
	if o.YieldToHPA {
		handler.WithHPAYield(hpas.InNamespace)
	}
	var nodes *nodefit.Cache
	if o.NodeFit {
		if nodes, err = nodefit.NewCache(clients.Core); err != nil {
			return err
		}
		handler.WithNodeFit(nodes)
	}
	var quotas *quota.Cache
	if o.QuotaFit {
		quotas = quota.NewCache(clients.Core, filter.WatchNamespace())
		handler.WithQuotaFit(quotas, func(v *vpav1.VerticalPodAutoscaler) int32 { return target.SurgeOf(workloads.Indexers, v) })
	}
	validator := vpa.NewValidator(o.Gates).WithConflicts(vpa.Conflicts{
		VPAs: vpasIn(vpaInformer.GetIndexer()),
		HPAs: hpas.InNamespace,
	})
	server := webhook.NewServer(handler, validator, metrics, nil)

	holder, _ := os.Hostname()
	leaseClient, err := leases.New(restConfig)
	if err != nil {
		return err
	}
	lease := status.NewWriter(leaseClient, status.WriterConfig{
		Namespace: o.LeaseNamespace(), Name: o.StatusLeaseName, Holder: holder, Interval: o.StatusLeaseUpdateInterval,
	}, clock.RealClock{})

	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("listening on port %d: %w", o.Port, err)
	}
	var closing atomic.Bool
	httpsServer := webhook.NewHTTPServer(ctx, closeWhenShuttingDown(server, &closing), tlsConfig, o.HTTPOptions())
	lameduck, err := newLameduck(restConfig, c, &closing)
	if err != nil {
		return err
	}

	rt := &component.Runtime{
		Health: healthserver.Options{
			Address:   o.Address,
			Registry:  registry,
			Profiling: o.Profiling,
			Readiness: []healthserver.Check{{Name: "certificates", Func: certs.Loaded}},
		},
		Servers: []component.Server{{Name: "webhook server", Serve: func(ctx context.Context) error {
			logger.Info("Serving admission webhook", "address", ln.Addr().String())
			return serveHTTPS(ctx, httpsServer, tls.NewListener(ln, tlsConfig))
		}}},
		Informers: admissionCaches{set: &caches, hpas: hpas, nodes: nodes, quotas: quotas},
		Lameduck:  lameduck,
		Work: func(ctx context.Context) error {
			if o.RegisterWebhook {
				if err := register(ctx, c, restConfig, certs); err != nil {
					return err
				}
			}
			g, ctx := errgroup.WithContext(ctx)
			if o.ReloadCert {
				g.Go(func() error { return prefix("certificate watcher", certs.Watch(ctx)) })
			}
			g.Go(func() error { return prefix("status lease", lease.Run(ctx)) })
			return g.Wait()
		},
	}
	return rt.Run(ctx)
}

// admissionCaches are the admission controller's informers. The HPA and
// quota caches start with them and are not waited for (see hpa.Cache); the
// node fit cache (nil without --node-fit) is.
type admissionCaches struct {
	set    *informers.Set
	hpas   *hpa.Cache
	nodes  *nodefit.Cache
	quotas *quota.Cache
}

func (c admissionCaches) Start(ctx context.Context) {
	c.set.Start(ctx)
	c.hpas.Start(ctx)
	if c.nodes != nil {
		c.nodes.Start(ctx)
	}
	if c.quotas != nil {
		c.quotas.Start(ctx)
	}
}

func (c admissionCaches) WaitForSync(ctx context.Context) error {
	if err := c.set.WaitForSync(ctx); err != nil {
		return err
	}
	if c.nodes != nil {
		return c.nodes.WaitForSync(ctx)
	}
	return nil
}

// newLameduck makes the webhook serve on after SIGTERM until its pod has
// left the webhook Service's ready endpoints, so that the API server sends
// no review to a closed port (see endpoints.Waiter); nil with
// --shutdown-drain-timeout=0.
//
// With --register-webhook, the last replica to stop then deletes the
// registration (see unregisterIfLast).
func newLameduck(restConfig *rest.Config, c options.Config, closing *atomic.Bool) (*component.Lameduck, error) {
	o := c.Options
	if o.ShutdownDrainTimeout <= 0 {
		return nil, nil
	}
	client, err := endpoints.NewLister(restConfig)
	if err != nil {
		return nil, err
	}
	eo := endpoints.Options{Namespace: o.Namespace, Service: o.WebhookService, Pod: podName()}
	if o.RegisterByURL {
		eo.Service = "" // the API server calls a URL, not the Service
	}
	waiter := endpoints.NewWaiter(client, eo)
	var configs webhook.Configurations
	if o.RegisterWebhook && !o.RegisterByURL {
		if configs, err = webhook.NewConfigurations(restConfig); err != nil {
			return nil, err
		}
	}
	return &component.Lameduck{Wait: func(ctx context.Context) error {
		closing.Store(true)
		if err := waiter.Wait(ctx); err != nil {
			return err
		}
		if configs != nil {
			unregisterIfLast(ctx, waiter, configs, registration(c, nil))
		}
		return nil
	}, Timeout: o.ShutdownDrainTimeout}, nil
}

// unregisterIfLast deletes the webhook registration when no other replica
// of the webhook Service remains: a scale to zero, an uninstall, or the
// last replica's node drained. A registration left behind calls a Service
// without endpoints, and the API server then holds every pod creation in
// the cluster for the webhook's whole timeout. During a rolling update the
// replacement replicas are endpoints of the Service (ready or starting), so
// the registration stays; a replica that starts registers again. When the
// EndpointSlices cannot be read, it stays too.
func unregisterIfLast(ctx context.Context, waiter *endpoints.Waiter, configs webhook.Configurations, reg webhook.Registration) {
	logger := klog.FromContext(ctx)
	others, err := waiter.Others(ctx)
	if err != nil {
		logger.Error(err, "Cannot tell whether other replicas remain; keeping the webhook registration")
		return
	}
	if others {
		logger.V(2).Info("Other replicas remain; keeping the webhook registration")
		return
	}
	if _, err := webhook.Unregister(ctx, configs, reg); err != nil {
		logger.Error(err, "The last replica could not remove the webhook registration")
	}
}

// closeWhenShuttingDown answers Connection: close once closing is set, so
// that the API server sends its next review on a new connection, which the
// Service routes to a ready pod. A kept-alive connection to this pod would
// otherwise be reused until the server closes it, and a review sent on it as
// it closes fails (a POST is not retried): the pod is admitted unpatched.
// Idle connections are not closed here, for the same reason; they close at
// the drain, by when the API server uses newer connections to other pods.
func closeWhenShuttingDown(h http.Handler, closing *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if closing.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// podName is this pod's name: $POD_NAME (the downward API), else the host
// name; empty outside a pod.
func podName() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return ""
	}
	name, _ := os.Hostname()
	return name
}

// httpsDrainTimeout bounds how long the webhook server drains on shutdown.
const httpsDrainTimeout = 5 * time.Second

// serveHTTPS serves on ln until ctx ends, then drains.
func serveHTTPS(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpsDrainTimeout)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// register creates or updates the webhook configuration and, with
// --reload-cert, patches its CA bundle when the CA changes.
func register(ctx context.Context, c options.Config, restConfig *rest.Config, certs *webhook.CertWatcher) error {
	o := c.Options
	configs, err := webhook.NewConfigurations(restConfig)
	if err != nil {
		return err
	}
	if err := webhook.Register(ctx, configs, registration(c, certs.CA())); err != nil {
		return err
	}
	if o.ReloadCert {
		certs.OnCAChange = func(ctx context.Context, ca []byte) error {
			return webhook.PatchCABundle(ctx, configs, o.WebhookConfigName, ca)
		}
	}
	return nil
}

// prefix names the part of the admission controller an error comes from.
func prefix(name string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func registration(c options.Config, ca []byte) webhook.Registration {
	o := c.Options
	reg := webhook.Registration{
		ConfigName:       o.WebhookConfigName,
		ServiceNamespace: o.Namespace,
		ServiceName:      o.WebhookService,
		CABundle:         ca,
		TimeoutSeconds:   int32(o.WebhookTimeoutSeconds),
		FailurePolicy:    admissionregistrationv1.Ignore,
		Labels:           c.WebhookLabels,
		OnlyNamespace:    o.Namespaces.Namespace,
	}
	if o.WebhookFailurePolicyFail {
		reg.FailurePolicy = admissionregistrationv1.Fail
	}
	if o.RegisterByURL {
		reg.URL = o.WebhookURL()
	}
	excluded := []string{"kube-system"}
	if o.Namespace != "kube-system" {
		excluded = append(excluded, o.Namespace)
	}
	for _, ns := range strings.Split(o.Namespaces.Ignored, ",") {
		if ns = strings.TrimSpace(ns); ns != "" && ns != "kube-system" && ns != o.Namespace {
			excluded = append(excluded, ns)
		}
	}
	reg.ExcludedNamespaces = excluded
	return reg
}
