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

// Package status publishes and reads the admission controller's health as a
// coordination.k8s.io Lease, as upstream VPA does: the admission controller
// renews the Lease (default kube-system/vpa-admission-controller) every
// --status-lease-update-interval, and the updater evicts pods only while the
// Lease is fresh, because evicted pods would otherwise come back without
// their recommendation.
//
// The Lease is written through the lease core (pkg/leases), which builds its
// spec. A Lease is fresh while renewTime (or, when never renewed, its
// creationTimestamp) plus the timeout is later than now; DefaultTimeout is
// upstream's one minute.
//
// Writer side:
//
//	w := status.NewWriter(leaseClient, status.WriterConfig{Namespace: ns, Name: status.DefaultLeaseName,
//		Holder: hostname, Interval: 10 * time.Second}, clock.RealClock{})
//	go w.Run(ctx)
//
// Reader side:
//
//	r := status.NewReader(leaseClient, ns, status.DefaultLeaseName, status.DefaultTimeout, clock.RealClock{})
//	fresh, err := r.IsFresh(ctx) // false with a nil error when the Lease is missing or stale
package status

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/pkg/leases"
)

const (
	// DefaultLeaseName is the name of the admission controller's Lease.
	DefaultLeaseName = "vpa-admission-controller"
	// DefaultNamespace is used when neither a flag nor $NAMESPACE names one.
	DefaultNamespace = "kube-system"
	// DefaultTimeout is how long after its last renewal a Lease counts as fresh.
	DefaultTimeout = time.Minute
	// DefaultInterval is upstream's renewal interval.
	DefaultInterval = 10 * time.Second
)

// IsFresh reports whether the lease was renewed (or, if never renewed,
// created) less than timeout before now. A nil lease is not fresh.
func IsFresh(lease *coordinationv1.Lease, timeout time.Duration, now time.Time) bool {
	if lease == nil {
		return false
	}
	last := lease.CreationTimestamp.Time
	if lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(last) {
		last = lease.Spec.RenewTime.Time
	}
	if last.IsZero() {
		return false
	}
	return last.Add(timeout).After(now)
}

// Reader checks the admission controller's Lease.
type Reader struct {
	client    leases.Client
	namespace string
	name      string
	timeout   time.Duration
	clock     clock.PassiveClock
}

// NewReader returns a Reader of the Lease namespace/name.
func NewReader(client leases.Client, namespace, name string, timeout time.Duration, clk clock.PassiveClock) *Reader {
	return &Reader{client: client, namespace: namespace, name: name, timeout: timeout, clock: clk}
}

// IsFresh reads the Lease and reports whether it is fresh. A missing Lease is
// not fresh and not an error; other API errors are returned.
func (r *Reader) IsFresh(ctx context.Context) (bool, error) {
	lease, err := r.client.Get(ctx, r.namespace, r.name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the admission controller status Lease %s/%s: %w", r.namespace, r.name, err)
	}
	return IsFresh(lease, r.timeout, r.clock.Now()), nil
}

// WriterConfig configures a Writer.
type WriterConfig struct {
	Namespace string
	Name      string
	// Holder is written to spec.holderIdentity, usually the host name.
	Holder string
	// Interval is the renewal period; also written as leaseDurationSeconds
	// (rounded up to whole seconds, at least one).
	Interval time.Duration
}

// Writer keeps the Lease renewed.
type Writer struct {
	client leases.Client
	holder *leases.Holder
	cfg    WriterConfig
	clock  clock.WithTicker
}

// NewWriter returns a Writer.
func NewWriter(client leases.Client, cfg WriterConfig, clk clock.WithTicker) *Writer {
	return &Writer{client: client, holder: leases.NewHolder(client, cfg.Holder, cfg.Interval, clk), cfg: cfg, clock: clk}
}

// Run renews the Lease now and then every interval until ctx is done.
// Failures are logged and retried at the next tick; Run returns nil when ctx
// ends.
func (w *Writer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("lease", klog.KRef(w.cfg.Namespace, w.cfg.Name))
	t := w.clock.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		if err := w.renewWithRetries(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Renewing the status Lease failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

func (w *Writer) renewWithRetries(ctx context.Context) error {
	backoff := wait.Backoff{Steps: 3, Duration: 100 * time.Millisecond, Factor: 3}
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = w.Renew(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// Renew creates the Lease or renews it with this writer as holder. A
// conflict (another replica renewed it at the same time) counts as success.
func (w *Writer) Renew(ctx context.Context) error {
	lease, err := w.client.Get(ctx, w.cfg.Namespace, w.cfg.Name)
	if apierrors.IsNotFound(err) {
		_, err = w.holder.Create(ctx, metav1.ObjectMeta{Namespace: w.cfg.Namespace, Name: w.cfg.Name})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	_, err = w.holder.Claim(ctx, lease)
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
