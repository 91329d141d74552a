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

package update

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/boost"
)

type fixedCounter map[string]int

func (f fixedCounter) ConfiguredReplicas(_ string, owner metav1.OwnerReference, live int) (int, error) {
	if owner.Kind == "Job" {
		return live, nil
	}
	n, ok := f[owner.Name]
	if !ok {
		return 0, errors.New("no replicas")
	}
	return n, nil
}

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func pending(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
func cond(t corev1.PodConditionType, reason string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason})
	}
}
func restartPolicy(p *corev1.Pod) {
	p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
}

func mkPods(kind, owner string, n int, opts map[int][]podOpt) []*corev1.Pod {
	var pods []*corev1.Pod
	yes := true
	for i := 0; i < n; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: fmt.Sprintf("%s-%d", owner, i), UID: types.UID(fmt.Sprintf("%s-%d", owner, i)),
				OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: owner, Controller: &yes}},
			},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		for _, o := range opts[i] {
			o(p)
		}
		pods = append(pods, p)
	}
	return pods
}

func vpaWith(mode vpav1.UpdateMode, minReplicas *int32) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{Spec: vpav1.VerticalPodAutoscalerSpec{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode, MinReplicas: minReplicas}}}
}

func i32(v int32) *int32 { return &v }

// TestEvictionTolerance covers the group stats, the disruption check and
// CanEvict of §3.2: how many pods of a group are evicted in one loop.
func TestEvictionTolerance(t *testing.T) {
	tests := map[string]struct {
		kind        string
		live        int
		configured  int
		tolerance   float64
		minReplicas int
		vpaMin      *int32
		opts        map[int][]podOpt
		wantEvicted int
	}{
		"tolerance 0.5 of 4 evicts 2":                  {live: 4, configured: 4, tolerance: 0.5, wantEvicted: 2},
		"tolerance 0.5 of 3 evicts 1 (truncated)":      {live: 3, configured: 3, tolerance: 0.5, wantEvicted: 1},
		"tolerance 0 evicts one per loop":              {live: 4, configured: 4, tolerance: 0, wantEvicted: 1},
		"tolerance truncating to 0 evicts one":         {live: 3, configured: 3, tolerance: 0.1, wantEvicted: 1},
		"tolerance 1 evicts all":                       {live: 4, configured: 4, tolerance: 1, wantEvicted: 4},
		"fewer running than configured reduces budget": {live: 3, configured: 4, tolerance: 0.5, wantEvicted: 1},
		"missing pods at tolerance 0 block evictions":  {live: 3, configured: 4, tolerance: 0, minReplicas: 2, wantEvicted: 0},
		"pending pods are evicted and not counted as running": {
			live: 4, configured: 4, tolerance: 0.5, opts: map[int][]podOpt{0: {pending}}, wantEvicted: 2,
		},
		"below --min-replicas nothing is evicted":    {live: 1, configured: 1, tolerance: 0.5, minReplicas: 2, wantEvicted: 0},
		"VPA minReplicas 1 lets a single pod go":     {live: 1, configured: 1, tolerance: 0.5, minReplicas: 2, vpaMin: i32(1), wantEvicted: 1},
		"VPA minReplicas overrides the flag upwards": {live: 3, configured: 3, tolerance: 0.5, minReplicas: 2, vpaMin: i32(5), wantEvicted: 0},
		"Job configured replicas are its live pods":  {kind: "Job", live: 4, tolerance: 0.5, wantEvicted: 2},
		"unreadable replica count skips the group":   {live: 4, configured: -1, tolerance: 0.5, wantEvicted: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kind := tc.kind
			if kind == "" {
				kind = "ReplicaSet"
			}
			counter := fixedCounter{}
			if tc.configured >= 0 {
				counter["rs"] = tc.configured
			}
			minReplicas := tc.minReplicas
			if minReplicas == 0 {
				minReplicas = 1
			}
			pods := mkPods(kind, "rs", tc.live, tc.opts)
			r := NewRestrictions(RestrictionOptions{
				Config:  RestrictionConfig{MinReplicas: minReplicas, EvictionTolerance: tc.tolerance},
				VPA:     vpaWith(vpav1.UpdateModeRecreate, tc.vpaMin),
				Counter: counter, Now: now,
			}, pods)
			evicted := 0
			for _, p := range pods {
				if r.CanEvict(p) {
					r.RecordEviction(p)
					evicted++
				}
			}
			if evicted != tc.wantEvicted {
				t.Errorf("evicted %d pods, want %d", evicted, tc.wantEvicted)
			}
		})
	}
}

func TestPodsWithoutController(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", UID: "bare"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	yes := true
	owned := mkPods("ReplicaSet", "rs", 1, nil)[0]
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "Deployment", Name: "d", Controller: &yes}}
	r := NewRestrictions(RestrictionOptions{Config: RestrictionConfig{MinReplicas: 1, EvictionTolerance: 1}, Counter: fixedCounter{"rs": 1, "d": 1}, Now: now}, []*corev1.Pod{pod, owned})
	for _, p := range []*corev1.Pod{pod, owned} {
		if r.CanEvict(p) {
			t.Errorf("%s: CanEvict = true for a pod without a well-known controller", p.Name)
		}
		if got := r.CanInPlaceUpdate(p, vpav1.UpdateModeInPlaceOrRecreate, true, false); got != InPlaceDeferred {
			t.Errorf("%s: CanInPlaceUpdate = %s, want Deferred", p.Name, got)
		}
	}
}

// TestResizingPodEviction covers CanEvictInPlacingPod of §3.2: the fallback
// timers of resizes in progress.
func TestResizingPodEviction(t *testing.T) {
	tests := map[string]struct {
		opts      []podOpt
		startedAt time.Duration // before now; 0 = unknown
		blocked   bool          // group not disruptable
		want      bool
	}{
		"deferred for 4m is kept":                  {opts: []podOpt{cond(corev1.PodResizePending, corev1.PodReasonDeferred)}, startedAt: 4 * time.Minute, want: false},
		"deferred for 6m is evicted":               {opts: []podOpt{cond(corev1.PodResizePending, corev1.PodReasonDeferred)}, startedAt: 6 * time.Minute, want: true},
		"deferred, start unknown, counts from now": {opts: []podOpt{cond(corev1.PodResizePending, corev1.PodReasonDeferred)}, want: false},
		"infeasible is evicted at once":            {opts: []podOpt{cond(corev1.PodResizePending, corev1.PodReasonInfeasible)}, want: true},
		"other pending reason is evicted":          {opts: []podOpt{cond(corev1.PodResizePending, "Whatever")}, want: true},
		"in progress for 59m is kept":              {opts: []podOpt{cond(corev1.PodResizeInProgress, "")}, startedAt: 59 * time.Minute, want: false},
		"in progress for 61m is evicted":           {opts: []podOpt{cond(corev1.PodResizeInProgress, "")}, startedAt: 61 * time.Minute, want: true},
		"in progress with Error is evicted":        {opts: []podOpt{cond(corev1.PodResizeInProgress, "Error")}, want: true},
		"infeasible in a blocked group is kept":    {opts: []podOpt{cond(corev1.PodResizePending, corev1.PodReasonInfeasible)}, blocked: true, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pods := mkPods("ReplicaSet", "rs", 2, map[int][]podOpt{0: tc.opts})
			r := NewRestrictions(RestrictionOptions{
				Config: RestrictionConfig{MinReplicas: 1, EvictionTolerance: 0.5}, VPA: vpaWith(vpav1.UpdateModeInPlaceOrRecreate, nil),
				Counter: fixedCounter{"rs": 2}, Now: now,
				ResizeStarted: func(*corev1.Pod) (time.Time, bool) {
					return now.Add(-tc.startedAt), tc.startedAt != 0
				},
			}, pods)
			if tc.blocked {
				r.RecordEviction(pods[1])
			}
			if got := r.CanEvict(pods[0]); got != tc.want {
				t.Errorf("CanEvict = %v, want %v", got, tc.want)
			}
			wantInPlace := InPlaceDeferred
			if tc.want {
				wantInPlace = InPlaceEvict
			}
			if got := r.CanInPlaceUpdate(pods[0], vpav1.UpdateModeInPlaceOrRecreate, true, false); got != wantInPlace {
				t.Errorf("CanInPlaceUpdate(InPlaceOrRecreate) = %s, want %s", got, wantInPlace)
			}
			if g := r.Group(pods[0]); g.Resizing != 1 {
				t.Errorf("Resizing = %d, want 1", g.Resizing)
			}
		})
	}
}

// TestCanInPlaceUpdate covers the CanInPlaceUpdate rules of §3.2 in order.
func TestCanInPlaceUpdate(t *testing.T) {
	tests := map[string]struct {
		mode             vpav1.UpdateMode
		live             int
		minReplicas      int
		skipBudget       bool
		opts             []podOpt
		noRecommendation bool
		infeasibleCached bool
		preDisrupted     bool
		want             InPlaceDecision
	}{
		"approved":                      {mode: vpav1.UpdateModeInPlaceOrRecreate, want: InPlaceApproved},
		"pending pod is deferred":       {mode: vpav1.UpdateModeInPlaceOrRecreate, opts: []podOpt{pending}, want: InPlaceDeferred},
		"no recommendation is deferred": {mode: vpav1.UpdateModeInPlace, noRecommendation: true, want: InPlaceDeferred},
		"cached infeasible in InPlace":  {mode: vpav1.UpdateModeInPlace, infeasibleCached: true, want: InPlaceInfeasibleCached},
		"cached infeasible is ignored by InPlaceOrRecreate": {
			mode: vpav1.UpdateModeInPlaceOrRecreate, infeasibleCached: true, want: InPlaceApproved,
		},
		"InPlace resize reported infeasible": {
			mode: vpav1.UpdateModeInPlace, opts: []podOpt{cond(corev1.PodResizePending, corev1.PodReasonInfeasible)}, want: InPlaceInfeasible,
		},
		"InPlace resize deferred": {
			mode: vpav1.UpdateModeInPlace, opts: []podOpt{cond(corev1.PodResizePending, corev1.PodReasonDeferred)}, want: InPlaceDeferred,
		},
		"InPlace resize in progress": {
			mode: vpav1.UpdateModeInPlace, opts: []podOpt{cond(corev1.PodResizeInProgress, "")}, want: InPlaceDeferred,
		},
		// Upstream 1.8: a resize the kubelet reports as failed (InProgress,
		// reason Error) is deferred and retried, not cached as infeasible
		// until the recommendation changes, as upstream 1.7 did.
		"InPlace resize error is deferred, not infeasible": {
			mode: vpav1.UpdateModeInPlace, opts: []podOpt{cond(corev1.PodResizeInProgress, corev1.PodReasonError)}, want: InPlaceDeferred,
		},
		"InPlaceOrRecreate infeasible falls back to eviction": {
			mode: vpav1.UpdateModeInPlaceOrRecreate, opts: []podOpt{cond(corev1.PodResizePending, corev1.PodReasonInfeasible)}, want: InPlaceEvict,
		},
		"group already disrupted is deferred": {mode: vpav1.UpdateModeInPlaceOrRecreate, live: 2, preDisrupted: true, want: InPlaceDeferred},
		"skip budget approves even when the group is disrupted": {
			mode: vpav1.UpdateModeInPlaceOrRecreate, live: 2, preDisrupted: true, skipBudget: true, want: InPlaceApproved,
		},
		"skip budget does not apply with a RestartContainer policy": {
			mode: vpav1.UpdateModeInPlaceOrRecreate, live: 2, preDisrupted: true, skipBudget: true, opts: []podOpt{restartPolicy}, want: InPlaceDeferred,
		},
		"below minReplicas with skip budget is approved": {
			mode: vpav1.UpdateModeInPlace, live: 1, minReplicas: 2, skipBudget: true, want: InPlaceApproved,
		},
		"below minReplicas without skip budget is deferred": {
			mode: vpav1.UpdateModeInPlace, live: 1, minReplicas: 2, want: InPlaceDeferred,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			live := tc.live
			if live == 0 {
				live = 2
			}
			minReplicas := tc.minReplicas
			if minReplicas == 0 {
				minReplicas = 1
			}
			pods := mkPods("ReplicaSet", "rs", live, map[int][]podOpt{0: tc.opts})
			r := NewRestrictions(RestrictionOptions{
				Config: RestrictionConfig{MinReplicas: minReplicas, EvictionTolerance: 0, InPlaceSkipDisruptionBudget: tc.skipBudget},
				VPA:    vpaWith(tc.mode, nil), Counter: fixedCounter{"rs": live}, Now: now,
			}, pods)
			if tc.preDisrupted {
				r.RecordInPlaceUpdate(pods[1])
			}
			if got := r.CanInPlaceUpdate(pods[0], tc.mode, !tc.noRecommendation, tc.infeasibleCached); got != tc.want {
				t.Errorf("CanInPlaceUpdate = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBelowMinReplicasBlocksEviction(t *testing.T) {
	pods := mkPods("ReplicaSet", "rs", 1, nil)
	r := NewRestrictions(RestrictionOptions{
		Config: RestrictionConfig{MinReplicas: 2, EvictionTolerance: 0.5, InPlaceSkipDisruptionBudget: true},
		VPA:    vpaWith(vpav1.UpdateModeInPlaceOrRecreate, nil), Counter: fixedCounter{"rs": 1}, Now: now,
	}, pods)
	if g := r.Group(pods[0]); g == nil || !g.BelowMinReplicas {
		t.Fatalf("group = %+v, want BelowMinReplicas", g)
	}
	if r.CanEvict(pods[0]) {
		t.Error("CanEvict = true in a group below minReplicas")
	}
}

func TestBoostedGroupBelowMinReplicasIsKeptForUnboosting(t *testing.T) {
	boosted := func(p *corev1.Pod) { p.Annotations = map[string]string{boost.Annotation("c"): "{}"} }
	cases := map[string]struct {
		keep        bool
		opts        map[int][]podOpt
		wantGroup   bool
		wantUnboost bool
		wantInPlace InPlaceDecision
	}{
		"without a boosted pod the group is left out":  {keep: true, opts: nil},
		"with the gate off the group is left out":      {keep: false, opts: map[int][]podOpt{0: {boosted}}},
		"a boosted pod keeps the group for unboosting": {keep: true, opts: map[int][]podOpt{0: {boosted}}, wantGroup: true, wantUnboost: true, wantInPlace: InPlaceDeferred},
		"a resizing pod is not unboosted":              {keep: true, opts: map[int][]podOpt{0: {boosted, cond(corev1.PodResizeInProgress, "")}}, wantGroup: true},
		"a pending pod is not unboosted":               {keep: true, opts: map[int][]podOpt{0: {boosted, pending}}, wantGroup: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pods := mkPods("ReplicaSet", "rs", 1, tc.opts)
			r := NewRestrictions(RestrictionOptions{Config: RestrictionConfig{MinReplicas: 2, EvictionTolerance: 0.5}, VPA: vpaWith(vpav1.UpdateModeInPlaceOrRecreate, nil),
				Counter: fixedCounter{"rs": 1}, Now: now, KeepBoosted: tc.keep}, pods)
			g := r.Group(pods[0])
			if (g != nil) != tc.wantGroup {
				t.Fatalf("group kept = %v, want %v", g != nil, tc.wantGroup)
			}
			if got := r.CanUnboost(pods[0]); got != tc.wantUnboost {
				t.Errorf("CanUnboost = %v, want %v", got, tc.wantUnboost)
			}
			if g == nil {
				return
			}
			if r.CanEvict(pods[0]) && pods[0].Status.Phase != corev1.PodPending {
				t.Error("a group kept only for unboosting may be evicted")
			}
			if tc.wantInPlace != "" {
				if got := r.CanInPlaceUpdate(pods[0], vpav1.UpdateModeInPlaceOrRecreate, true, false); got != tc.wantInPlace {
					t.Errorf("CanInPlaceUpdate = %v, want %v", got, tc.wantInPlace)
				}
			}
		})
	}
}
