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

package policy

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
)

func TestSummaryStatus(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = string(rune('z'-i)) + "/Deployment/w (also policy b)"
	}
	for _, tc := range []struct {
		name            string
		s               Summary
		ready           metav1.ConditionStatus
		reason          string
		conflicting     bool
		listed          int
		observed        int64
		firstConflicted string
	}{
		{name: "reconciled", s: Summary{Counts: Counts{Selected: 3, Managed: 2}, Observed: 4}, ready: metav1.ConditionTrue, reason: "Reconciled", observed: 4},
		{name: "a namespace not planned with this generation yet keeps the observed generation", s: Summary{},
			ready: metav1.ConditionFalse, reason: "Reconciling", observed: 2},
		{name: "invalid", s: Summary{Observed: 4, Invalid: errors.New("bad selector")}, ready: metav1.ConditionFalse, reason: "InvalidSpec", observed: 4},
		{name: "a kind not watched", s: Summary{Observed: 4, Unwatched: []string{"Rollout.argoproj.io: waiting"}}, ready: metav1.ConditionFalse, reason: "KindNotWatched", observed: 4},
		{name: "a write failed", s: Summary{Observed: 4, Failed: errors.New("forbidden")}, ready: metav1.ConditionFalse, reason: "WriteFailed", observed: 4},
		{name: "conflicts, listed up to 10 in order", s: Summary{Counts: Counts{Selected: 12, Conflicts: many}, Observed: 4},
			ready: metav1.ConditionTrue, reason: "Reconciled", conflicting: true, listed: 10, observed: 4, firstConflicted: "o/Deployment/w (also policy b)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &policyv1alpha1.VerticalPodAutoscalerPolicy{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 4}}
			p.Status.ObservedGeneration = 2
			st := tc.s.Status(p)
			ready := meta.FindStatusCondition(st.Conditions, policyv1alpha1.ConditionReady)
			if ready == nil || ready.Status != tc.ready || ready.Reason != tc.reason || ready.ObservedGeneration != 4 {
				t.Errorf("Ready %+v, want %s %s", ready, tc.ready, tc.reason)
			}
			if got := meta.IsStatusConditionTrue(st.Conditions, policyv1alpha1.ConditionConflicting); got != tc.conflicting {
				t.Errorf("Conflicting %v, want %v", got, tc.conflicting)
			}
			if len(st.ConflictingWorkloads) != tc.listed || int(st.Conflicts) != len(tc.s.Conflicts) {
				t.Errorf("conflicts %d listed %d, want %d listed %d", st.Conflicts, len(st.ConflictingWorkloads), len(tc.s.Conflicts), tc.listed)
			}
			if tc.firstConflicted != "" && st.ConflictingWorkloads[0] != tc.firstConflicted {
				t.Errorf("first listed %q, want %q", st.ConflictingWorkloads[0], tc.firstConflicted)
			}
			if st.ObservedGeneration != tc.observed {
				t.Errorf("observedGeneration %d, want %d", st.ObservedGeneration, tc.observed)
			}
			// The same summary again changes nothing: no write in steady state.
			p.Status = st
			if again := tc.s.Status(p); !equalStatus(again, st) {
				t.Errorf("a second status differs: %+v", again)
			}
		})
	}
}
