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
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Seconds is a lease duration as leaseDurationSeconds: rounded up to whole
// seconds, at least one (the API server rejects zero) and at most the
// largest int32.
func Seconds(d time.Duration) int32 {
	s := (d + time.Second - 1) / time.Second
	if s < 1 {
		return 1
	}
	if s > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(s)
}

// HolderOf returns the holder identity a Lease names, "" when it names none.
func HolderOf(lease *coordinationv1.Lease) string {
	if lease == nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// NextSpec returns the spec of a Lease that holder holds for d as of now,
// following prev, the spec read or written last (nil: the Lease is new).
// When prev names holder it is a renewal: the acquire time and the
// transitions are kept. Otherwise holder takes the Lease now, which counts
// one transition more than prev (none for a new Lease).
func NextSpec(prev *coordinationv1.LeaseSpec, holder string, d time.Duration, now time.Time) coordinationv1.LeaseSpec {
	switch {
	case prev == nil:
		return spec(holder, d, now, nil, 0)
	case ptr.Deref(prev.HolderIdentity, "") == holder:
		return spec(holder, d, now, prev.AcquireTime, ptr.Deref(prev.LeaseTransitions, 0))
	default:
		return spec(holder, d, now, nil, ptr.Deref(prev.LeaseTransitions, 0)+1)
	}
}

// ReleasedSpec returns the spec of a Lease given up at now: no holder, the
// shortest duration, and prev's transitions, so that the next holder counts
// the hand-over.
func ReleasedSpec(prev *coordinationv1.LeaseSpec, now time.Time) coordinationv1.LeaseSpec {
	var transitions int32
	if prev != nil {
		transitions = ptr.Deref(prev.LeaseTransitions, 0)
	}
	return spec("", time.Second, now, nil, transitions)
}

// spec is the one place a Lease spec is built: held by holder for d,
// renewed now, acquired at acquired (nil: now).
func spec(holder string, d time.Duration, now time.Time, acquired *metav1.MicroTime, transitions int32) coordinationv1.LeaseSpec {
	renewed := metav1.NewMicroTime(now)
	if acquired == nil {
		acquired = &renewed
	}
	return coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(holder),
		LeaseDurationSeconds: ptr.To(Seconds(d)),
		AcquireTime:          acquired.DeepCopy(),
		RenewTime:            &renewed,
		LeaseTransitions:     ptr.To(transitions),
	}
}
