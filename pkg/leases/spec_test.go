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
	"math"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestSeconds: the int32 clamp of leaseDurationSeconds, which leader
// election, the shards and the status Lease share.
func TestSeconds(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want int32
	}{
		{name: "default", d: 15 * time.Second, want: 15},
		{name: "below a second", d: 300 * time.Millisecond, want: 1},
		{name: "rounded up", d: 1500 * time.Millisecond, want: 2},
		{name: "zero", d: 0, want: 1},
		{name: "negative", d: -time.Minute, want: 1},
		{name: "largest int32 seconds", d: math.MaxInt32 * time.Second, want: math.MaxInt32},
		{name: "just past int32", d: (math.MaxInt32 + 1) * time.Second, want: math.MaxInt32},
		{name: "huge", d: 1 << 62, want: 1<<31 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Seconds(tt.d); got != tt.want {
				t.Errorf("Seconds(%v) = %d, want %d", tt.d, got, tt.want)
			}
		})
	}
}

func TestNextSpec(t *testing.T) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.UTC)
	nowMicro := metav1.NewMicroTime(now)
	earlier := metav1.NewMicroTime(now.Add(-time.Hour))
	tests := []struct {
		name            string
		prev            *coordinationv1.LeaseSpec
		d               time.Duration
		wantAcquire     metav1.MicroTime
		wantTransitions int32
		wantSeconds     int32
	}{
		{name: "new lease", prev: nil, d: 15 * time.Second, wantAcquire: nowMicro, wantTransitions: 0, wantSeconds: 15},
		{
			name:        "renewal keeps the acquire time and the transitions",
			prev:        &coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), AcquireTime: &earlier, LeaseTransitions: ptr.To[int32](3)},
			d:           15 * time.Second,
			wantAcquire: earlier, wantTransitions: 3, wantSeconds: 15,
		},
		{
			name:        "take-over from another holder counts a transition",
			prev:        &coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), AcquireTime: &earlier, LeaseTransitions: ptr.To[int32](3)},
			d:           15 * time.Second,
			wantAcquire: nowMicro, wantTransitions: 4, wantSeconds: 15,
		},
		{
			name:        "take-over of a released lease counts a transition",
			prev:        &coordinationv1.LeaseSpec{HolderIdentity: ptr.To("")},
			d:           time.Minute,
			wantAcquire: nowMicro, wantTransitions: 1, wantSeconds: 60,
		},
		{
			name:        "empty spec",
			prev:        &coordinationv1.LeaseSpec{},
			d:           1 << 62,
			wantAcquire: nowMicro, wantTransitions: 1, wantSeconds: math.MaxInt32,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NextSpec(tt.prev, "me", tt.d, now)
			if h := ptr.Deref(got.HolderIdentity, ""); h != "me" {
				t.Errorf("holder = %q, want me", h)
			}
			if s := ptr.Deref(got.LeaseDurationSeconds, 0); s != tt.wantSeconds {
				t.Errorf("leaseDurationSeconds = %d, want %d", s, tt.wantSeconds)
			}
			if got.RenewTime == nil || !got.RenewTime.Equal(&nowMicro) {
				t.Errorf("renewTime = %v, want %v", got.RenewTime, nowMicro)
			}
			if got.AcquireTime == nil || !got.AcquireTime.Equal(&tt.wantAcquire) {
				t.Errorf("acquireTime = %v, want %v", got.AcquireTime, tt.wantAcquire)
			}
			if tr := ptr.Deref(got.LeaseTransitions, -1); tr != tt.wantTransitions {
				t.Errorf("leaseTransitions = %d, want %d", tr, tt.wantTransitions)
			}
			if tt.prev != nil && got.AcquireTime == tt.prev.AcquireTime {
				t.Error("the acquire time is shared with prev, not copied")
			}
		})
	}
}

func TestReleasedSpec(t *testing.T) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name            string
		prev            *coordinationv1.LeaseSpec
		wantTransitions int32
	}{
		{name: "keeps the transitions", prev: &coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), LeaseTransitions: ptr.To[int32](7)}, wantTransitions: 7},
		{name: "no transitions", prev: &coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me")}, wantTransitions: 0},
		{name: "no spec", prev: nil, wantTransitions: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReleasedSpec(tt.prev, now)
			if h := ptr.Deref(got.HolderIdentity, "x"); h != "" {
				t.Errorf("holder = %q, want none", h)
			}
			if s := ptr.Deref(got.LeaseDurationSeconds, 0); s != 1 {
				t.Errorf("leaseDurationSeconds = %d, want 1", s)
			}
			if got.AcquireTime == nil || got.RenewTime == nil || !got.AcquireTime.Time.Equal(now) || !got.RenewTime.Time.Equal(now) {
				t.Errorf("acquire/renew time = %v/%v, want %v", got.AcquireTime, got.RenewTime, now)
			}
			if tr := ptr.Deref(got.LeaseTransitions, -1); tr != tt.wantTransitions {
				t.Errorf("leaseTransitions = %d, want %d", tr, tt.wantTransitions)
			}
		})
	}
}
