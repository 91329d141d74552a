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

package status

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestIsFresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(created, renewed time.Time) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		if !renewed.IsZero() {
			l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
		}
		return l
	}
	tests := map[string]struct {
		lease *coordinationv1.Lease
		want  bool
	}{
		"nil":                               {lease: nil, want: false},
		"renewed 30s ago":                   {lease: lease(now.Add(-time.Hour), now.Add(-30*time.Second)), want: true},
		"renewed 61s ago":                   {lease: lease(now.Add(-time.Hour), now.Add(-61*time.Second)), want: false},
		"renewed exactly timeout ago":       {lease: lease(now.Add(-time.Hour), now.Add(-time.Minute)), want: false},
		"never renewed, created 10s ago":    {lease: lease(now.Add(-10*time.Second), time.Time{}), want: true},
		"never renewed, created 2m ago":     {lease: lease(now.Add(-2*time.Minute), time.Time{}), want: false},
		"no timestamps at all":              {lease: &coordinationv1.Lease{}, want: false},
		"renew time older than create time": {lease: lease(now.Add(-5*time.Second), now.Add(-time.Hour)), want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsFresh(tc.lease, DefaultTimeout, now); got != tc.want {
				t.Errorf("IsFresh = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWriterAndReader(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	r := NewReader(clientsetLeases{client}, "ns", DefaultLeaseName, DefaultTimeout, clk)
	if fresh, err := r.IsFresh(ctx); fresh || err != nil {
		t.Fatalf("missing lease: fresh=%v err=%v, want false, nil", fresh, err)
	}
	w := NewWriter(clientsetLeases{client}, WriterConfig{Namespace: "ns", Name: DefaultLeaseName, Holder: "host-a", Interval: 10 * time.Second}, clk)
	if err := w.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := client.CoordinationV1().Leases("ns").Get(ctx, DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "host-a" || *l.Spec.LeaseDurationSeconds != 10 || !l.Spec.RenewTime.Time.Equal(clk.Now()) {
		t.Errorf("created lease spec = %+v", l.Spec)
	}
	if fresh, err := r.IsFresh(ctx); !fresh || err != nil {
		t.Fatalf("after renew: fresh=%v err=%v", fresh, err)
	}
	clk.Step(2 * time.Minute)
	if fresh, _ := r.IsFresh(ctx); fresh {
		t.Fatal("lease still fresh two minutes after the last renewal")
	}
	if err := w.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if fresh, _ := r.IsFresh(ctx); !fresh {
		t.Fatal("lease not fresh after a renewal that updates it")
	}
}

func TestWriterRunRenewsEveryInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	w := NewWriter(clientsetLeases{client}, WriterConfig{Namespace: "ns", Name: "l", Holder: "h", Interval: 10 * time.Second}, clk)
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	renewTime := func() time.Time {
		l, err := client.CoordinationV1().Leases("ns").Get(ctx, "l", metav1.GetOptions{})
		if err != nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	start := clk.Now()
	waitUntil(t, func() bool { return renewTime().Equal(start) })
	waitUntil(t, clk.HasWaiters)
	clk.Step(10 * time.Second)
	waitUntil(t, func() bool { return renewTime().Equal(start.Add(10 * time.Second)) })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after cancel", err)
	}
}

// clientsetLeases serves leases.Client from a (fake) clientset.
type clientsetLeases struct{ kubernetes.Interface }

func (c clientsetLeases) Get(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	return c.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c clientsetLeases) Create(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return c.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{})
}

func (c clientsetLeases) Update(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return c.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{})
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
