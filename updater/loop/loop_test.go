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
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/boost"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/pkg/update"
	"github.com/openvpa/openvpa/updater/inplace"
)

var testNow = time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)

type fakeList[T any] []T

func (f fakeList[T]) List() ([]T, error) { return f, nil }

// fakeResolver resolves a VPA to its Deployment, whose pods carry app=<name>.
type fakeResolver struct{}

func (fakeResolver) Resolve(_ context.Context, vpa *vpav1.VerticalPodAutoscaler) (*target.Target, error) {
	name := vpa.Spec.TargetRef.Name
	return &target.Target{
		VPA:      vpa,
		Ref:      target.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: vpa.Namespace, Name: name},
		Selector: labels.SelectorFromSet(labels.Set{"app": name}),
	}, nil
}

func (fakeResolver) PodController(_ context.Context, pod *corev1.Pod) (*target.Ref, error) {
	return &target.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: pod.Namespace, Name: pod.Labels["app"]}, nil
}

// liveCounter configures as many replicas as there are live pods.
type liveCounter struct{}

func (liveCounter) ConfiguredReplicas(_ string, _ metav1.OwnerReference, live int) (int, error) {
	return live, nil
}

type fakeStatus struct {
	fresh bool
	err   error
}

func (s fakeStatus) IsFresh(context.Context) (bool, error) { return s.fresh, s.err }

type noEvicter struct{ t *testing.T }

func (e noEvicter) Evict(_ context.Context, pod *corev1.Pod, _ *vpav1.VerticalPodAutoscaler) error {
	e.t.Errorf("pod %s evicted", pod.Name)
	return errors.New("no evictions in this test")
}

// fakeResizer records the calls. With together > 0, each Unboost waits
// (up to a deadline) until that many Unboost calls are in flight at once.
type fakeResizer struct {
	together int

	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	arrived     int
	allArrived  chan struct{}
	unboosted   []string
	resized     []string
	infeasible  []string
	refused     []string
	// resizeErr is what Resize returns, with no requests.
	resizeErr error
	// onResize, when set, runs in each Resize; its error is Resize's.
	onResize func(ctx context.Context) error
}

func (f *fakeResizer) Resize(ctx context.Context, pod *corev1.Pod, _ []recommendation.ContainerResources, _ map[string]bool, _ time.Time) (map[string]corev1.ResourceList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resized = append(f.resized, pod.Name)
	if f.onResize != nil {
		if err := f.onResize(ctx); err != nil {
			return nil, err
		}
	}
	if f.resizeErr != nil {
		return nil, f.resizeErr
	}
	return map[string]corev1.ResourceList{}, nil
}

func (f *fakeResizer) RecordSeen(context.Context, *corev1.Pod, time.Time) error { return nil }

func (f *fakeResizer) MarkInfeasible(_ context.Context, pod *corev1.Pod, now time.Time) (inplace.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.infeasible = append(f.infeasible, pod.Name)
	return inplace.Record{}, nil
}

func (f *fakeResizer) MarkRefused(_ context.Context, pod *corev1.Pod, _ map[string]corev1.ResourceList, _ time.Time) (inplace.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused = append(f.refused, pod.Name)
	return inplace.Record{}, nil
}

func (f *fakeResizer) Unboost(ctx context.Context, pod *corev1.Pod, _ []recommendation.ContainerResources, _ []string) error {
	f.mu.Lock()
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.arrived++
	if f.together > 0 && f.arrived == f.together {
		close(f.allArrived)
	}
	f.mu.Unlock()
	if f.together > 0 {
		select {
		case <-f.allArrived:
		case <-time.After(5 * time.Second): // deadline: the others never came
		case <-ctx.Done():
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight--
	f.unboosted = append(f.unboosted, pod.Name)
	return nil
}

type harness struct {
	t           *testing.T
	cfg         Config
	vpas        []*vpav1.VerticalPodAutoscaler
	pods        []*corev1.Pod
	status      fakeStatus
	resizer     *fakeResizer
	recorder    *record.FakeRecorder
	metrics     *Metrics
	fit         func(*vpav1.VerticalPodAutoscaler, *corev1.Pod) recommendation.Fit
	scalePoints ScalePointKeeper
	// ctx is the run's context and evicter its Evicter; nil for
	// context.Background() and noEvicter.
	ctx     context.Context
	evicter Evicter
}

// countingKeeper counts its syncs.
type countingKeeper struct{ syncs int }

func (k *countingKeeper) Sync(context.Context) error { k.syncs++; return nil }

func newHarness(t *testing.T) *harness {
	return &harness{
		t: t,
		cfg: Config{
			Priority:                     update.Thresholds{PodUpdateThreshold: 0.1, PodLifetimeUpdateThreshold: 12 * time.Hour, EvictAfterOOMThreshold: 10 * time.Minute},
			Restriction:                  update.RestrictionConfig{MinReplicas: 2, EvictionTolerance: 0.5},
			UseAdmissionControllerStatus: true,
		},
		status:   fakeStatus{fresh: true},
		resizer:  &fakeResizer{},
		recorder: record.NewFakeRecorder(100),
		metrics:  NewMetrics(prometheus.NewRegistry()),
	}
}

func (h *harness) run() {
	h.t.Helper()
	ctx, evicter := h.ctx, h.evicter
	if ctx == nil {
		ctx = context.Background()
	}
	if evicter == nil {
		evicter = noEvicter{t: h.t}
	}
	u := New(h.cfg, Deps{
		VPAs:        fakeList[*vpav1.VerticalPodAutoscaler](h.vpas),
		Pods:        fakeList[*corev1.Pod](h.pods),
		LimitRanges: func(string) limitrange.Merged { return limitrange.Merged{} },
		Resolver:    fakeResolver{},
		Counter:     liveCounter{},
		Status:      h.status,
		Evicter:     evicter,
		Resizer:     h.resizer,
		Recorder:    h.recorder,
		Metrics:     h.metrics,
		Clock:       testingclock.NewFakeClock(testNow),
		Fit:         h.fit,
		ScalePoints: h.scalePoints,
	})
	if err := u.RunOnce(ctx); err != nil && h.status.err == nil && ctx.Err() == nil {
		h.t.Fatalf("RunOnce: %v", err)
	}
}

func newVPA(name string, mode vpav1.UpdateMode) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: name, APIVersion: "apps/v1"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
		Status: vpav1.VerticalPodAutoscalerStatus{Recommendation: &vpav1.RecommendedPodResources{
			ContainerRecommendations: []vpav1.RecommendedContainerResources{{
				ContainerName: "app",
				Target:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
				LowerBound:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m")},
				UpperBound:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")},
			}},
		}},
	}
}

func newPod(app string, i int, cpu string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("%s-%d", app, i), UID: types.UID(fmt.Sprintf("%s-%d", app, i)),
			Labels:            map[string]string{"app": app},
			CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-rs", Controller: &yes}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			StartTime: &metav1.Time{Time: testNow.Add(-time.Hour)},
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(testNow.Add(-30 * time.Minute)),
			}},
		},
	}
}

// boosted marks the pod's container as boosted at creation.
func boosted(pod *corev1.Pod) *corev1.Pod {
	pod.Annotations = map[string]string{boost.Annotation("app"): boost.Encode(pod.Spec.Containers[0].Resources)}
	return pod
}

func withBoost(vpa *vpav1.VerticalPodAutoscaler) *vpav1.VerticalPodAutoscaler {
	factor, secs := int32(2), int32(10)
	vpa.Spec.StartupBoost = &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: &factor, DurationSeconds: &secs}}
	return vpa
}

// TestAdmissionControllerStatusInvalidMetric: a loop skipped for the
// admission controller's status is counted by reason, under upstream 1.8's
// metric vpa_updater_admission_controller_status_invalid_total.
func TestAdmissionControllerStatusInvalidMetric(t *testing.T) {
	tests := map[string]struct {
		status     fakeStatus
		wantReason string
	}{
		"stale lease": {status: fakeStatus{fresh: false}, wantReason: "invalid"},
		"read fails":  {status: fakeStatus{err: errors.New("boom")}, wantReason: "error"},
	}
	// Both reasons start at 0 (so that an alert on increase() sees the first
	// skipped loop); the loop adds 1 to its reason.
	other := map[string]string{"invalid": "error", "error": "invalid"}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.status = tc.status
			h.vpas = []*vpav1.VerticalPodAutoscaler{newVPA("web", vpav1.UpdateModeRecreate)}
			h.run()
			want := fmt.Sprintf(`
# HELP vpa_updater_admission_controller_status_invalid_total Number of times Updater skipped its main loop because the Admission Controller status Lease was missing, stale or otherwise invalid.
# TYPE vpa_updater_admission_controller_status_invalid_total counter
vpa_updater_admission_controller_status_invalid_total{reason=%q} 0
vpa_updater_admission_controller_status_invalid_total{reason=%q} 1
`, other[tc.wantReason], tc.wantReason)
			if err := testutil.CollectAndCompare(h.metrics.AdmissionControllerStatusInvalid, strings.NewReader(want)); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestCountersStartAtZero: upstream 1.8 (kubernetes/autoscaler#9058) exports
// evicted_pods_total and in_place_updated_pods_total at 0 for every VPA the
// updater handles, before anything happened to its pods, so that increase()
// reads 0 rather than no data. Here a Recreate VPA whose pods need nothing
// and an Initial VPA handled only for its startup boost.
func TestCountersStartAtZero(t *testing.T) {
	h := newHarness(t)
	h.cfg.StartupBoost = true
	h.vpas = []*vpav1.VerticalPodAutoscaler{newVPA("web", vpav1.UpdateModeRecreate), withBoost(newVPA("batch", vpav1.UpdateModeInitial))}
	h.pods = []*corev1.Pod{newPod("web", 0, "500m"), newPod("web", 1, "500m"), newPod("batch", 0, "500m")}
	h.run()
	evicted := `
# HELP vpa_updater_evicted_pods_total Number of Pods evicted by Updater to apply a new recommendation.
# TYPE vpa_updater_evicted_pods_total counter
vpa_updater_evicted_pods_total{update_mode="Initial",vpa_name="batch",vpa_namespace="ns",vpa_size_log2="0"} 0
vpa_updater_evicted_pods_total{update_mode="Recreate",vpa_name="web",vpa_namespace="ns",vpa_size_log2="1"} 0
`
	if err := testutil.CollectAndCompare(h.metrics.EvictedPods, strings.NewReader(evicted)); err != nil {
		t.Error(err)
	}
	inPlace := `
# HELP vpa_updater_in_place_updated_pods_total Number of Pods updated in-place by Updater to apply a new recommendation.
# TYPE vpa_updater_in_place_updated_pods_total counter
vpa_updater_in_place_updated_pods_total{vpa_name="batch",vpa_namespace="ns",vpa_size_log2="0"} 0
vpa_updater_in_place_updated_pods_total{vpa_name="web",vpa_namespace="ns",vpa_size_log2="1"} 0
`
	if err := testutil.CollectAndCompare(h.metrics.InPlaceUpdatedPods, strings.NewReader(inPlace)); err != nil {
		t.Error(err)
	}
}

// TestResizeErrorIsRetried: upstream 1.8 treats a resize the kubelet reports
// as failed (PodResizeInProgress, reason Error) as deferred: the next loop
// tries again. Upstream 1.7 cached it as infeasible, and an InPlace VPA left
// the pod alone until its recommendation went down.
func TestResizeErrorIsRetried(t *testing.T) {
	h := newHarness(t)
	h.cfg.InPlace = true
	h.vpas = []*vpav1.VerticalPodAutoscaler{newVPA("web", vpav1.UpdateModeInPlace)}
	failed := newPod("web", 0, "100m")
	failed.Status.Conditions = append(failed.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, Reason: corev1.PodReasonError, Message: "resize failed",
	})
	h.pods = []*corev1.Pod{failed, newPod("web", 1, "500m"), newPod("web", 2, "500m")}
	for range 2 {
		h.run()
	}
	if len(h.resizer.infeasible) != 0 {
		t.Errorf("resize error recorded as infeasible for %v", h.resizer.infeasible)
	}
	// No pod was skipped as infeasible: the counter has no series at all.
	if n := testutil.CollectAndCount(h.metrics.InfeasibleSkips); n != 0 {
		t.Errorf("%d infeasible-skip series, want none", n)
	}
	if want := []string{"web-0", "web-0"}; fmt.Sprint(h.resizer.resized) != fmt.Sprint(want) {
		t.Errorf("resized %v, want %v (one retry per loop)", h.resizer.resized, want)
	}
}

// TestConcurrentBoostEnds: --concurrent-cpu-startup-boost-syncs (upstream
// 1.8) is the number of startup boosts ended at once.
func TestConcurrentBoostEnds(t *testing.T) {
	tests := map[string]struct {
		workers, together, wantMax int
	}{
		"default, one at a time": {workers: 1, wantMax: 1},
		"two workers":            {workers: 2, together: 2, wantMax: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.cfg.StartupBoost = true
			h.cfg.BoostWorkers = tc.workers
			h.resizer.together = tc.together
			h.resizer.allArrived = make(chan struct{})
			h.vpas = []*vpav1.VerticalPodAutoscaler{withBoost(newVPA("web", vpav1.UpdateModeInitial))}
			for i := range 4 {
				h.pods = append(h.pods, boosted(newPod("web", i, "1")))
			}
			h.run()
			// Four replicas at tolerance 0.5: two may be disrupted.
			if len(h.resizer.unboosted) != 2 {
				t.Fatalf("unboosted %v, want two pods", h.resizer.unboosted)
			}
			if h.resizer.maxInFlight != tc.wantMax {
				t.Errorf("%d boosts ended at once, want %d", h.resizer.maxInFlight, tc.wantMax)
			}
			if got := testutil.ToFloat64(h.metrics.InPlaceUpdatedPods.WithLabelValues("2", "web", "ns")); got != 2 {
				t.Errorf("in_place_updated_pods_total %v, want 2", got)
			}
		})
	}
}

// TestNodeCapacityRefusalIsRecorded: upstream 1.8's isInfeasibleError: a
// resize the API server refuses as Forbidden with a NodeCapacity cause is
// counted as InPlaceUpdateInfeasible and, for an InPlace VPA, recorded so the
// same requests are not sent again; any other error is a plain
// InPlaceUpdateError, retried next loop.
func TestNodeCapacityRefusalIsRecorded(t *testing.T) {
	capacity := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("node too small"))
	capacity.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: "NodeCapacity", Message: "node too small"}}
	tests := map[string]struct {
		err         error
		mode        vpav1.UpdateMode
		wantReason  string
		wantRefused int
	}{
		"node capacity, InPlace":   {err: capacity, mode: vpav1.UpdateModeInPlace, wantReason: "InPlaceUpdateInfeasible", wantRefused: 1},
		"plain Forbidden, InPlace": {err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("no")), mode: vpav1.UpdateModeInPlace, wantReason: "InPlaceUpdateError"},
		"other error, InPlace":     {err: errors.New("connection refused"), mode: vpav1.UpdateModeInPlace, wantReason: "InPlaceUpdateError"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.cfg.InPlace = true
			h.resizer.resizeErr = tc.err
			h.vpas = []*vpav1.VerticalPodAutoscaler{newVPA("web", tc.mode)}
			h.pods = []*corev1.Pod{newPod("web", 0, "100m"), newPod("web", 1, "500m"), newPod("web", 2, "500m")}
			h.run()
			if got := testutil.ToFloat64(h.metrics.FailedInPlaceUpdates.WithLabelValues("1", tc.wantReason, "web", "ns")); got != 1 {
				t.Errorf("failed_in_place_update_attempts_total{reason=%q} = %v, want 1", tc.wantReason, got)
			}
			if len(h.resizer.refused) != tc.wantRefused {
				t.Errorf("refusals recorded for %v, want %d", h.resizer.refused, tc.wantRefused)
			}
		})
	}
}

// TestScalePointsFollowTheStatus: the HPAs' scale points are kept once per
// loop, and not while the admission controller's status is stale nor with
// --dry-run.
func TestScalePointsFollowTheStatus(t *testing.T) {
	for name, tc := range map[string]struct {
		fresh, dryRun bool
		want          int
	}{
		"fresh":   {fresh: true, want: 1},
		"stale":   {fresh: false, want: 0},
		"dry run": {fresh: true, dryRun: true, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			k := &countingKeeper{}
			h.scalePoints = k
			h.status = fakeStatus{fresh: tc.fresh}
			h.cfg.DryRun = tc.dryRun
			h.run()
			if k.syncs != tc.want {
				t.Errorf("%d syncs, want %d", k.syncs, tc.want)
			}
		})
	}
}

// stopOnFirst is an updater being stopped while its first request is in
// flight: that request cancels the run's context (SIGTERM, or the Lease
// lost) and then answers as a client does, with the error of the context
// it was given, if any.
type stopOnFirst struct {
	stop  context.CancelFunc
	calls []string
}

func (s *stopOnFirst) request(ctx context.Context, pod string) error {
	s.calls = append(s.calls, pod)
	s.stop()
	return ctx.Err()
}

func (s *stopOnFirst) Evict(ctx context.Context, pod *corev1.Pod, _ *vpav1.VerticalPodAutoscaler) error {
	return s.request(ctx, pod.Name)
}

// TestStoppingMidLoop: an updater told to stop while an eviction or a
// resize is in flight lets that request complete and records it, then
// starts no other, and counts no failure: the updates it did not start are
// the next leader's. Before, the request was abandoned with its context,
// its outcome unknown, and both it and the next pod's rate-limiter wait
// were counted as failed attempts, so every rolling upgrade of the updater
// could raise vpa_updater_failed_eviction_attempts_total.
func TestStoppingMidLoop(t *testing.T) {
	for _, mode := range []vpav1.UpdateMode{vpav1.UpdateModeRecreate, vpav1.UpdateModeInPlace} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t)
			h.cfg.InPlace = true
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			h.ctx = ctx
			s := &stopOnFirst{stop: stop}
			h.evicter = s
			h.resizer.onResize = func(ctx context.Context) error { return s.request(ctx, "resize") }
			h.vpas = []*vpav1.VerticalPodAutoscaler{newVPA("web", mode)}
			// Four pods far below the recommendation: two may be updated
			// at once (tolerance 0.5).
			for i := range 4 {
				h.pods = append(h.pods, newPod("web", i, "100m"))
			}
			h.run()
			if len(s.calls) != 1 {
				t.Errorf("requests %v, want one: none started after the stop", s.calls)
			}
			if n := total(t, h.metrics.FailedEvictions) + total(t, h.metrics.FailedInPlaceUpdates); n != 0 {
				t.Errorf("%v failed attempts counted, want 0", n)
			}
			done := total(t, h.metrics.EvictedPods) + total(t, h.metrics.InPlaceUpdatedPods)
			if done != 1 {
				t.Errorf("%v updates recorded, want the one in flight", done)
			}
		})
	}
}

// total sums the counters a collector holds.
func total(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var sum float64
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		sum += pb.GetCounter().GetValue()
	}
	return sum
}
