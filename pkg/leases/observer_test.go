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

package leases

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func heldBy(holder string, renewed time.Time) *coordinationv1.Lease {
	t := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), RenewTime: &t, LeaseDurationSeconds: ptr.To[int32](15)},
	}
}

// TestObserverExpiry: a holding is live until its spec has not changed for
// the lease duration by the observer's clock, whatever times it states.
func TestObserverExpiry(t *testing.T) {
	const duration = 15 * time.Second
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	longAgo := start.Add(-24 * time.Hour)
	type step struct {
		advance time.Duration
		observe *coordinationv1.Lease // nil: only advance
	}
	tests := []struct {
		name       string
		steps      []step
		wantHolder string
		wantLive   bool
	}{
		{name: "never observed", wantHolder: "", wantLive: false},
		{
			name:       "just observed, stating an old renewal",
			steps:      []step{{observe: heldBy("a", longAgo)}},
			wantHolder: "a", wantLive: true,
		},
		{
			name:       "unchanged for just under the duration",
			steps:      []step{{observe: heldBy("a", longAgo)}, {advance: duration - time.Nanosecond, observe: heldBy("a", longAgo)}},
			wantHolder: "a", wantLive: true,
		},
		{
			name:       "unchanged for the duration",
			steps:      []step{{observe: heldBy("a", longAgo)}, {advance: duration, observe: heldBy("a", longAgo)}},
			wantHolder: "a", wantLive: false,
		},
		{
			name:       "renewed in between",
			steps:      []step{{observe: heldBy("a", longAgo)}, {advance: 10 * time.Second, observe: heldBy("a", start)}, {advance: 10 * time.Second}},
			wantHolder: "a", wantLive: true,
		},
		{
			name:       "no holder is never live",
			steps:      []step{{observe: heldBy("", start)}},
			wantHolder: "", wantLive: false,
		},
		{
			name:       "another holder took it",
			steps:      []step{{observe: heldBy("a", start)}, {advance: 20 * time.Second, observe: heldBy("b", start)}},
			wantHolder: "b", wantLive: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(start)
			o := NewObserver(clk, duration)
			for _, s := range tt.steps {
				clk.SetTime(clk.Now().Add(s.advance))
				o.Observe(s.observe)
			}
			holder, live := o.Holder("ns", "l")
			if holder != tt.wantHolder || live != tt.wantLive {
				t.Errorf("Holder() = %q, %v, want %q, %v", holder, live, tt.wantHolder, tt.wantLive)
			}
			if _, live := o.Holder("other-ns", "l"); live {
				t.Error("a Lease of another namespace is live")
			}
		})
	}
}

// TestObserverWrote: a holding this holder wrote counts from when the write
// began.
func TestObserverWrote(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(start)
	o := NewObserver(clk, 15*time.Second)
	clk.SetTime(start.Add(2 * time.Second))
	o.Wrote(heldBy("me", start), start)
	clk.SetTime(start.Add(15 * time.Second))
	if holder, live := o.Holder("ns", "l"); holder != "me" || live {
		t.Errorf("Holder() = %q, %v 15s after the write began, want me, false", holder, live)
	}
}
