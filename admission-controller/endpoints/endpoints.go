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

// Package endpoints tells when a pod is out of its Service's rotation: when
// no EndpointSlice of the Service lists it as ready, so the API server's
// service resolver sends it nothing new.
package endpoints

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// Lister lists a namespace's EndpointSlices that match a label selector.
type Lister interface {
	ListEndpointSlices(ctx context.Context, namespace, selector string) (*discoveryv1.EndpointSliceList, error)
}

// ListFunc is a function that is a Lister.
type ListFunc func(ctx context.Context, namespace, selector string) (*discoveryv1.EndpointSliceList, error)

// ListEndpointSlices calls f.
func (f ListFunc) ListEndpointSlices(ctx context.Context, namespace, selector string) (*discoveryv1.EndpointSliceList, error) {
	return f(ctx, namespace, selector)
}

// NewLister returns a Lister on the API server of cfg.
func NewLister(cfg *rest.Config) (Lister, error) {
	rc, err := kubeclient.RESTClient(cfg, discoveryv1.SchemeGroupVersion, discoveryv1.AddToScheme)
	if err != nil {
		return nil, fmt.Errorf("building the EndpointSlice client: %w", err)
	}
	return ListFunc(func(ctx context.Context, namespace, selector string) (*discoveryv1.EndpointSliceList, error) {
		out := &discoveryv1.EndpointSliceList{}
		err := rc.Get().Namespace(namespace).Resource("endpointslices").
			VersionedParams(&metav1.ListOptions{LabelSelector: selector}, metav1.ParameterCodec).Do(ctx).Into(out)
		if err != nil {
			return nil, err
		}
		return out, nil
	}), nil
}

// Defaults of Options.
const (
	DefaultInterval = 500 * time.Millisecond
	DefaultMargin   = time.Second
	DefaultFallback = 5 * time.Second
)

// Options say whose endpoint to wait for, and how.
type Options struct {
	// Namespace and Service name the Service; Pod is this pod's name.
	// Without any of them the wait returns at once.
	Namespace, Service, Pod string
	// Interval is the time between two lists of the EndpointSlices.
	Interval time.Duration
	// Margin is waited after the endpoint turned not ready, for the
	// API server to see it too.
	Margin time.Duration
	// Fallback is waited instead when the EndpointSlices cannot be
	// listed (e.g. no RBAC for them).
	Fallback time.Duration
	// Clock is nil for the real one.
	Clock clock.Clock
}

// Waiter waits until the pod is out of rotation.
type Waiter struct {
	client Lister
	o      Options
}

// NewWaiter returns a Waiter listing EndpointSlices through client, with
// the defaults for o's zero fields.
func NewWaiter(client Lister, o Options) *Waiter {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Margin <= 0 {
		o.Margin = DefaultMargin
	}
	if o.Fallback <= 0 {
		o.Fallback = DefaultFallback
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Waiter{client: client, o: o}
}

// state is what the Service's EndpointSlices say of the pod.
type state int

const (
	absent   state = iota // no endpoint of the Service is the pod
	ready                 // an endpoint of the pod is ready
	notReady              // the pod's endpoints are all not ready
)

// Wait returns once no endpoint of the Service that is this pod is ready,
// and the margin passed; at once when the pod is not behind the Service
// (no Service, or not running in a pod). When the EndpointSlices cannot be
// listed it logs why and waits the fallback. It returns ctx's error when
// ctx ends first.
func (w *Waiter) Wait(ctx context.Context) error {
	o := w.o
	if o.Namespace == "" || o.Service == "" || o.Pod == "" {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("service", klog.KRef(o.Namespace, o.Service), "pod", o.Pod)
	seen := false
	for {
		st, err := w.state(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			logger.Error(err, "Cannot list the webhook Service's EndpointSlices; waiting a fixed delay instead", "delay", o.Fallback)
			return w.sleep(ctx, o.Fallback)
		case st == absent && !seen:
			logger.V(2).Info("Not behind the webhook Service; not waiting to leave it")
			return nil
		case st == ready:
			if !seen {
				logger.Info("Waiting for the webhook Service to take this pod out of rotation")
				seen = true
			}
			if err := w.sleep(ctx, o.Interval); err != nil {
				return err
			}
		default:
			logger.Info("Out of the webhook Service's rotation", "margin", o.Margin)
			return w.sleep(ctx, o.Margin)
		}
	}
}

// state lists the Service's EndpointSlices and finds the pod's endpoints.
func (w *Waiter) state(ctx context.Context) (state, error) {
	list, err := w.client.ListEndpointSlices(ctx, w.o.Namespace, discoveryv1.LabelServiceName+"="+w.o.Service)
	if err != nil {
		return absent, err
	}
	st := absent
	for _, slice := range list.Items {
		for _, ep := range slice.Endpoints {
			ref := ep.TargetRef
			if ref == nil || ref.Kind != "Pod" || ref.Name != w.o.Pod || (ref.Namespace != "" && ref.Namespace != w.o.Namespace) {
				continue
			}
			// An unknown readiness is taken as ready, as consumers of
			// EndpointSlices do.
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return ready, nil
			}
			st = notReady
		}
	}
	return st, nil
}

func (w *Waiter) sleep(ctx context.Context, d time.Duration) error {
	t := w.o.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Others reports whether an EndpointSlice of the Service lists a pod other
// than this one that is not terminating: a replica that serves, or one
// that is starting and will. A terminating pod does not count, so that
// replicas stopping together (a scale to zero, an uninstall) each see that
// none remains. When the pod is not behind a Service (empty options) it
// reports true: nothing can be said of the others, so nothing is removed.
func (w *Waiter) Others(ctx context.Context) (bool, error) {
	o := w.o
	if o.Namespace == "" || o.Service == "" || o.Pod == "" {
		return true, nil
	}
	list, err := w.client.ListEndpointSlices(ctx, o.Namespace, discoveryv1.LabelServiceName+"="+o.Service)
	if err != nil {
		return true, err
	}
	for _, slice := range list.Items {
		for _, ep := range slice.Endpoints {
			ref := ep.TargetRef
			if ref == nil || ref.Kind != "Pod" || ref.Name == o.Pod {
				continue
			}
			if ep.Conditions.Terminating != nil && *ep.Conditions.Terminating {
				continue
			}
			return true, nil
		}
	}
	return false, nil
}
