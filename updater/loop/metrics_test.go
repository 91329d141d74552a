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

package loop

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

type fixedStatus bool

func (s fixedStatus) IsFresh(context.Context) (bool, error) { return bool(s), nil }

type countingVPAs struct{ lists int }

func (l *countingVPAs) List() ([]*vpav1.VerticalPodAutoscaler, error) {
	l.lists++
	return nil, nil
}

// TestSkippedLoopsCountStaleAdmissionStatus checks that a loop skipped for a
// stale admission controller status is counted, and a loop that runs is not.
func TestSkippedLoopsCountStaleAdmissionStatus(t *testing.T) {
	tests := map[string]struct {
		fresh       bool
		wantSkipped float64
		wantLists   int
	}{
		"stale: skipped": {fresh: false, wantSkipped: 1},
		"fresh: runs":    {fresh: true, wantLists: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			vpas := &countingVPAs{}
			u := New(Config{UseAdmissionControllerStatus: true}, Deps{
				VPAs: vpas, Status: fixedStatus(tc.fresh), Metrics: m, Clock: clocktesting.NewFakeClock(time.Unix(0, 0)),
			})
			if err := u.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := testutil.ToFloat64(m.AdmissionControllerStatusInvalid.WithLabelValues("invalid")); got != tc.wantSkipped {
				t.Errorf("skipped loops = %v, want %v", got, tc.wantSkipped)
			}
			if vpas.lists != tc.wantLists {
				t.Errorf("VPAs listed %d times, want %d", vpas.lists, tc.wantLists)
			}
		})
	}
}
