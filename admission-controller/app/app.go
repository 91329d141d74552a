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

// Package app wires the admission controller: flags, clients, informers, the
// HTTPS webhook server, webhook registration, the status Lease and the
// metrics and health server.
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

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/admission-controller/app/options"
	"github.com/openvpa/openvpa/admission-controller/pod"
	"github.com/openvpa/openvpa/admission-controller/vpa"
	"github.com/openvpa/openvpa/admission-controller/webhook"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/events"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/leases"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/status"
	"github.com/openvpa/openvpa/pkg/target"
)

// Main parses args and runs the admission controller until ctx ends.
func Main(ctx context.Context, args []string) error {
	o := options.NewOptions()
	fs := pflag.NewFlagSet("vpa-admission-controller", pflag.ContinueOnError)
	sections := o.FlagSections()
	sections.AddTo(fs)
	fs.Usage = func() { sections.Usage(fs.Output(), "Usage: vpa-admission-controller [flags]") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if errs := o.Validate(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	ctx, err := o.Logging.Apply(ctx, "vpa-admission-controller")
	if err != nil {
		return err
	}
	err = Run(ctx, o)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// Stopped (SIGTERM) while starting, e.g. waiting for the caches: a
		// graceful stop, not a failure.
		return nil
	}
	return err
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

// Run runs the admission controller with validated options.
func Run(ctx context.Context, o *options.Options) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

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

	restConfig, err := o.Kube.RESTConfig()
	if err != nil {
		return err
	}
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
	finder := pod.NewFinder(vpaInformer.GetIndexer(), resolver, filter.Allows)
	if err := finder.CacheSelectorsOf(workloads.Informers); err != nil {
		return err
	}
	recorder, stopEvents := events.NewRecorder(ctx, clients, "vpa-admission-controller")
	defer stopEvents()
	handler := pod.NewHandler(finder, limitRanges(lrs)).WithRecorder(recorder)
	if o.Gates.Enabled(features.CPUStartupBoost) {
		maxBoost, err := o.MaxCPUBoost()
		if err != nil {
			return err
		}
		finder.WithStartupBoost()
		handler.WithStartupBoost(maxBoost)
	}
	if o.Gates.Enabled(features.NativeSidecar) {
		handler.WithNativeSidecars()
	}
	hpas, err := hpa.NewCache(restConfig, filter.WatchNamespace())
	if err != nil {
		return err
	}
	validator := vpa.NewValidator(o.Gates).WithConflicts(vpa.Conflicts{
		VPAs: vpasIn(vpaInformer.GetIndexer()),
		HPAs: hpas.InNamespace,
	})
	server := webhook.NewServer(handler, validator, metrics, nil)

	var synced atomic.Bool
	health := healthserver.Options{
		Address:   o.Address,
		Registry:  registry,
		Profiling: o.Profiling,
		Readiness: []healthserver.Check{
			{Name: "certificates", Func: certs.Loaded},
			{Name: "informers", Func: func() error {
				if !synced.Load() {
					return errors.New("informers not synced")
				}
				return nil
			}},
		},
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("listening on port %d: %w", o.Port, err)
	}
	httpsServer := webhook.NewHTTPServer(ctx, server, tlsConfig, o.HTTPOptions())

	errc := make(chan error, 5)
	running := 0
	start := func(name string, f func() error) {
		running++
		go func() {
			err := f()
			if err != nil {
				err = fmt.Errorf("%s: %w", name, err)
			}
			errc <- err
		}()
	}
	start("webhook server", func() error {
		logger.Info("Serving admission webhook", "address", ln.Addr().String())
		err := httpsServer.Serve(tls.NewListener(ln, tlsConfig))
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	})
	start("health server", func() error { return healthserver.Serve(ctx, health) })

	caches.Start(ctx)
	hpas.Start(ctx) // not waited for: see hpa.Cache
	if err := caches.WaitForSync(ctx); err != nil {
		return err
	}
	synced.Store(true)
	logger.Info("Informers synced")

	if o.RegisterWebhook {
		reg, err := registration(o, certs.CA())
		if err != nil {
			return err
		}
		configs, err := webhook.NewConfigurations(restConfig)
		if err != nil {
			return err
		}
		if err := webhook.Register(ctx, configs, reg); err != nil {
			return err
		}
		if o.ReloadCert {
			certs.OnCAChange = func(ctx context.Context, ca []byte) error {
				return webhook.PatchCABundle(ctx, configs, o.WebhookConfigName, ca)
			}
		}
	}
	if o.ReloadCert {
		start("certificate watcher", func() error { return certs.Watch(ctx) })
	}
	holder, _ := os.Hostname()
	leaseClient, err := leases.New(restConfig)
	if err != nil {
		return err
	}
	lease := status.NewWriter(leaseClient, status.WriterConfig{
		Namespace: o.LeaseNamespace(), Name: o.StatusLeaseName, Holder: holder, Interval: o.StatusLeaseUpdateInterval,
	}, clock.RealClock{})
	start("status lease", func() error { return lease.Run(ctx) })

	var firstErr error
	select {
	case <-ctx.Done():
	case firstErr = <-errc:
		running--
	}
	cancel()
	shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	_ = httpsServer.Shutdown(shutdownCtx)
	for ; running > 0; running-- {
		if err := <-errc; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func registration(o *options.Options, ca []byte) (webhook.Registration, error) {
	lbls, err := o.Labels()
	if err != nil {
		return webhook.Registration{}, err
	}
	reg := webhook.Registration{
		ConfigName:       o.WebhookConfigName,
		ServiceNamespace: o.Namespace,
		ServiceName:      o.WebhookService,
		CABundle:         ca,
		TimeoutSeconds:   int32(o.WebhookTimeoutSeconds),
		FailurePolicy:    admissionregistrationv1.Ignore,
		Labels:           lbls,
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
	return reg, nil
}
