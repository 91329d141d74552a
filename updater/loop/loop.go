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

// Package loop is the updater's periodic loop: it finds the pods whose
// requests should follow their VPA's recommendation and evicts or resizes
// them in place, within the limits of pkg/update's Restrictions, the rate
// limiters and the admission controller's health.
package loop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/boost"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/sidecar"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/pkg/update"
	"github.com/openvpa/openvpa/updater/eviction"
	"github.com/openvpa/openvpa/updater/inplace"
)

// Event reasons besides eviction's.
const (
	ReasonInPlaceResized       = "InPlaceResizedByVPA"
	ReasonInPlaceResizeSkipped = "InPlaceResizeSkipped"
	ReasonDryRunEviction       = "EvictionDryRun"
	ReasonDryRunInPlaceResize  = "InPlaceResizeDryRun"
)

// Config holds the loop's settings, from the updater flags.
type Config struct {
	Priority    update.Thresholds
	Restriction update.RestrictionConfig
	// EvictionRateLimit (per second, ≤0 disables) and EvictionRateBurst
	// bound evictions, and separately in-place updates.
	EvictionRateLimit float64
	EvictionRateBurst int
	// UseAdmissionControllerStatus skips the loop while the admission
	// controller's Lease is stale.
	UseAdmissionControllerStatus bool
	// DryRun records decisions as events and metrics without acting.
	DryRun bool
	// PerVPAConfig enables evictAfterOOMSeconds.
	PerVPAConfig bool
	// InPlace enables the InPlace mode (feature gate).
	InPlace bool
	// StartupBoost enables unboosting pods boosted at creation
	// (feature gate CPUStartupBoost).
	StartupBoost bool
	// NativeSidecars updates native sidecars like containers (feature gate
	// NativeSidecar): pods are planned on their sidecar.View.
	NativeSidecars bool
	// BoostWorkers is how many startup boosts are ended in place at once
	// (--concurrent-cpu-startup-boost-syncs); below 1 means 1.
	BoostWorkers int
	// Namespaces filters the VPAs handled.
	Namespaces namespaces.Filter
}

// VPALister lists VPAs.
type VPALister interface {
	List() ([]*vpav1.VerticalPodAutoscaler, error)
}

// PodLister lists the live, scheduled pods.
type PodLister interface {
	List() ([]*corev1.Pod, error)
}

// Resolver resolves VPA targets and pod controllers (pkg/target.Resolver).
type Resolver interface {
	Resolve(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (*target.Target, error)
	PodController(ctx context.Context, pod *corev1.Pod) (*target.Ref, error)
}

// StatusReader tells whether the admission controller is healthy.
type StatusReader interface {
	IsFresh(ctx context.Context) (bool, error)
}

// Evicter evicts a pod.
type Evicter interface {
	Evict(ctx context.Context, pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler) error
}

// Resizer resizes pods in place and keeps the bookkeeping (inplace.Client).
type Resizer interface {
	Resize(ctx context.Context, pod *corev1.Pod, resources []recommendation.ContainerResources, observed map[string]bool, now time.Time) (map[string]corev1.ResourceList, error)
	RecordSeen(ctx context.Context, pod *corev1.Pod, now time.Time) error
	MarkInfeasible(ctx context.Context, pod *corev1.Pod, now time.Time) (inplace.Record, error)
	MarkRefused(ctx context.Context, pod *corev1.Pod, requests map[string]corev1.ResourceList, now time.Time) (inplace.Record, error)
	Unboost(ctx context.Context, pod *corev1.Pod, resources []recommendation.ContainerResources, boosted []string) error
}

// Deps are the loop's collaborators.
type Deps struct {
	VPAs        VPALister
	Pods        PodLister
	LimitRanges func(namespace string) limitrange.Merged
	Resolver    Resolver
	Counter     update.ReplicaCounter
	Status      StatusReader
	Evicter     Evicter
	Resizer     Resizer
	Recorder    record.EventRecorder
	Metrics     *Metrics
	Clock       clock.WithTicker
	// Fit returns what a pod of the VPA must fit besides the LimitRanges
	// (node fit, the namespace's quota); nil fits nothing more, as upstream.
	Fit func(vpa *vpav1.VerticalPodAutoscaler, pod *corev1.Pod) recommendation.Fit
	// ScalePoints keeps the scale point of HPAs (scalepoint.Keeper), once
	// per loop while the admission controller's status is fresh; nil keeps
	// none.
	ScalePoints ScalePointKeeper
}

// ScalePointKeeper keeps the HPAs' scale points (scalepoint.Keeper).
type ScalePointKeeper interface {
	Sync(ctx context.Context) error
}

// Updater runs the loop.
type Updater struct {
	cfg            Config
	d              Deps
	evictLimiter   *rate.Limiter
	inPlaceLimiter *rate.Limiter
}

// New returns an Updater.
func New(cfg Config, d Deps) *Updater {
	newLimiter := func() *rate.Limiter {
		if cfg.EvictionRateLimit <= 0 {
			return rate.NewLimiter(rate.Inf, 0)
		}
		return rate.NewLimiter(rate.Limit(cfg.EvictionRateLimit), cfg.EvictionRateBurst)
	}
	return &Updater{cfg: cfg, d: d, evictLimiter: newLimiter(), inPlaceLimiter: newLimiter()}
}

// Run calls RunOnce every interval until ctx ends; each run gets a deadline
// of one interval. onLoop is called after each run.
func (u *Updater) Run(ctx context.Context, interval time.Duration, onLoop func()) error {
	ticker := u.d.Clock.NewTicker(interval)
	defer ticker.Stop()
	for {
		runCtx, cancel := context.WithTimeout(ctx, interval)
		if err := u.RunOnce(runCtx); err != nil && !stopping(runCtx) {
			klog.FromContext(ctx).Error(err, "Updater loop failed")
		}
		cancel()
		if onLoop != nil {
			onLoop()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

type controlled struct {
	target *target.Target
	pods   []*corev1.Pod
}

// RunOnce runs one loop.
func (u *Updater) RunOnce(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	start := u.d.Clock.Now()
	defer func() {
		took := u.d.Clock.Since(start)
		u.d.Metrics.ExecutionLatency.WithLabelValues("total").Observe(took.Seconds())
		logger.V(4).Info("Updater loop done", "duration", took)
	}()

	if u.cfg.UseAdmissionControllerStatus {
		fresh, err := u.d.Status.IsFresh(ctx)
		if err != nil {
			u.d.Metrics.AdmissionControllerStatusInvalid.WithLabelValues("error").Inc()
			return err
		}
		if !fresh {
			u.d.Metrics.AdmissionControllerStatusInvalid.WithLabelValues("invalid").Inc()
			logger.Info("Admission controller status is stale or missing; skipping this loop")
			return nil
		}
	}

	if u.d.ScalePoints != nil && !u.cfg.DryRun {
		// After the status check: while the admission controller is
		// down, the updater changes nothing, HPAs included.
		if err := u.d.ScalePoints.Sync(ctx); err != nil {
			logger.Error(err, "Keeping the HPAs' scale points failed")
		}
	}

	step := u.d.Clock.Now()
	vpas, err := u.d.VPAs.List()
	if err != nil {
		return fmt.Errorf("listing VPAs: %w", err)
	}
	var targets []*target.Target
	for _, vpa := range vpas {
		if !u.cfg.Namespaces.Allows(vpa.Namespace) {
			continue
		}
		if !vpav1.GetUpdateMode(vpa).UpdatesRunningPods() && !(u.cfg.StartupBoost && boost.Configured(vpa)) {
			continue
		}
		t, err := u.d.Resolver.Resolve(ctx, vpa)
		if err != nil {
			logger.V(5).Info("Skipping VPA whose target cannot be resolved", "vpa", klog.KObj(vpa), "err", err)
			continue
		}
		targets = append(targets, t)
	}
	u.d.Metrics.ExecutionLatency.WithLabelValues("ListVPAs").Observe(u.d.Clock.Since(step).Seconds())
	u.resetGauges()
	if len(targets) == 0 {
		return nil
	}

	step = u.d.Clock.Now()
	pods, err := u.d.Pods.List()
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	matcher := target.NewMatcher(targets)
	byVPA := map[*target.Target]*controlled{}
	var order []*controlled
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		ctrl, err := u.d.Resolver.PodController(ctx, pod)
		if err != nil || ctrl == nil {
			continue
		}
		t := matcher.ControllingVPA(pod, ctrl)
		if t == nil {
			continue
		}
		c := byVPA[t]
		if c == nil {
			c = &controlled{target: t}
			byVPA[t] = c
			order = append(order, c)
		}
		c.pods = append(c.pods, pod)
	}
	u.d.Metrics.ExecutionLatency.WithLabelValues("ListPods").Observe(u.d.Clock.Since(step).Seconds())

	for _, c := range order {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		u.processVPA(ctx, c.target.VPA, c.pods)
	}
	return nil
}

func (u *Updater) resetGauges() {
	m := u.d.Metrics
	for _, g := range []interface{ Reset() }{m.ControlledPods, m.EvictablePods, m.VPAsWithEvictablePods, m.VPAsWithEvictedPods,
		m.InPlaceUpdatablePods, m.VPAsWithInPlaceUpdatable, m.VPAsWithInPlaceUpdated} {
		g.Reset()
	}
}

// candidate is a pod chosen for an update.
type candidate struct {
	pod       *corev1.Pod
	decision  update.Decision
	resources []recommendation.ContainerResources
	observed  map[string]bool
	requests  map[string]corev1.ResourceList
	// replacementFits says the quota admits the pod an eviction makes.
	replacementFits bool
}

func (u *Updater) processVPA(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler, pods []*corev1.Pod) {
	logger := klog.FromContext(ctx).WithValues("vpa", klog.KObj(vpa))
	ctx = klog.NewContext(ctx, logger)
	mode := vpav1.GetUpdateMode(vpa)
	size := sizeLog2(len(pods))
	now := u.d.Clock.Now()
	m := u.d.Metrics
	m.ControlledPods.WithLabelValues(size, string(mode)).Add(float64(len(pods)))
	// The per-VPA counters exist from the first loop that sees the VPA, so
	// that rate() and increase() over them read 0 rather than nothing
	// (upstream 1.8, kubernetes/autoscaler#9058).
	m.EvictedPods.WithLabelValues(size, string(mode), vpa.Name, vpa.Namespace).Add(0)
	m.InPlaceUpdatedPods.WithLabelValues(size, vpa.Name, vpa.Namespace).Add(0)

	step := u.d.Clock.Now()
	lr := u.d.LimitRanges(vpa.Namespace)
	boosting := u.cfg.StartupBoost && boost.Configured(vpa)
	restr := update.NewRestrictions(update.RestrictionOptions{
		Config: u.cfg.Restriction, VPA: vpa, Counter: u.d.Counter, Now: now, ResizeStarted: inplace.ResizeStarted,
		KeepBoosted: boosting,
	}, pods)
	for key, why := range restr.Skipped {
		logger.V(5).Info("Replica group left alone", "group", key, "reason", why)
	}
	var fit func(*corev1.Pod) recommendation.Fit
	if u.d.Fit != nil {
		fit = func(pod *corev1.Pod) recommendation.Fit { return u.d.Fit(vpa, pod) }
	}
	if boosting {
		pods = u.unboost(ctx, vpa, size, restr, lr, fit, pods)
	}
	if !mode.UpdatesRunningPods() {
		return
	}
	if mode == vpav1.UpdateModeInPlace && !u.cfg.InPlace {
		logger.Info("InPlace mode needs the InPlace feature gate; skipping")
		return
	}
	if rec := vpa.Status.Recommendation; rec == nil || len(rec.ContainerRecommendations) == 0 {
		return
	}
	all, planned := update.Plan(vpa, pods, update.PlanOptions{
		Thresholds: u.cfg.Priority, PerVPAConfig: u.cfg.PerVPAConfig, LimitRanges: lr, Now: now, View: u.view, Fit: fit,
	})
	for _, p := range all {
		switch {
		case p.Outcome == update.EvictionRequirementsNotMet:
			logger.V(5).Info("Pod left alone by evictionRequirements", "pod", klog.KObj(p.Pod))
		case p.Plan != nil && p.Plan.Conflict != nil:
			u.limitRangeConflict(logger, vpa, p.Pod, *p.Plan)
		}
		if p.Outcome == update.QuotaConflict {
			u.quotaConflict(logger, vpa, p.Pod, p.Why)
		}
	}
	candidates := make([]candidate, 0, len(planned))
	for _, p := range planned { // most urgent first
		candidates = append(candidates, candidate{pod: p.Pod, decision: p.Decision, resources: p.Plan.Containers, observed: p.Observed, requests: p.Requests,
			replacementFits: p.ReplacementFits})
	}
	m.ExecutionLatency.WithLabelValues("FilterPods").Observe(u.d.Clock.Since(step).Seconds())

	var toEvict []candidate
	switch mode {
	case vpav1.UpdateModeInPlace, vpav1.UpdateModeInPlaceOrRecreate:
		toEvict = u.inPlace(ctx, vpa, mode, size, restr, candidates)
	default:
		toEvict = candidates
	}
	if len(toEvict) == 0 {
		return
	}

	step = u.d.Clock.Now()
	evictable, evicted := 0, 0
	for _, c := range toEvict {
		if !c.replacementFits {
			// An in-place update that fell back to eviction, whose
			// replacement the quota would refuse.
			u.quotaConflict(logger, vpa, c.pod, "the namespace's ResourceQuotas would refuse the replacement pod while the evicted one terminates")
			continue
		}
		if !restr.CanEvict(c.pod) {
			continue
		}
		evictable++
		if u.cfg.DryRun {
			u.dryRun(vpa, c, "evict", ReasonDryRunEviction)
			restr.RecordEviction(c.pod)
			continue
		}
		if stopping(ctx) {
			logger.V(2).Info("Updater stopping; the remaining evictions are left to the next leader's loop")
			break
		}
		if err := u.evictLimiter.Wait(ctx); err != nil {
			if stopping(ctx) {
				break
			}
			m.FailedEvictions.WithLabelValues(size, string(mode), "EvictionRateLimiterWaitFailed", vpa.Name, vpa.Namespace).Inc()
			logger.V(2).Info("Eviction rate limiter wait failed", "err", err)
			break
		}
		reqCtx, cancel := inFlight(ctx)
		err := u.d.Evicter.Evict(reqCtx, c.pod, vpa)
		cancel()
		if err != nil {
			m.FailedEvictions.WithLabelValues(size, string(mode), "EvictionError", vpa.Name, vpa.Namespace).Inc()
			if errors.Is(err, eviction.ErrRefused) {
				logger.V(2).Info("Eviction refused; retrying in a later loop", "pod", klog.KObj(c.pod), "err", err)
			} else {
				logger.Error(err, "Evicting pod", "pod", klog.KObj(c.pod))
			}
			continue
		}
		logger.Info("Evicted pod", "pod", klog.KObj(c.pod), "reason", c.decision.Reason, "requests", inplace.Describe(c.requests))
		restr.RecordEviction(c.pod)
		evicted++
		m.EvictedPods.WithLabelValues(size, string(mode), vpa.Name, vpa.Namespace).Inc()
	}
	m.EvictablePods.WithLabelValues(size, string(mode)).Add(float64(evictable))
	if evictable > 0 {
		m.VPAsWithEvictablePods.WithLabelValues(size, string(mode)).Inc()
	}
	if evicted > 0 {
		m.VPAsWithEvictedPods.WithLabelValues(size, string(mode)).Inc()
	}
	m.ExecutionLatency.WithLabelValues("EvictPods").Observe(u.d.Clock.Since(step).Seconds())
}

// requestTimeout bounds one eviction or resize, including one in flight
// when the updater stops.
const requestTimeout = 10 * time.Second

// stopping reports whether the loop's context was cancelled, rather than
// having passed its deadline: the updater is stopping, on a signal or on
// losing its Lease. The updates not started then are not failures; the
// next leader's loop does them.
func stopping(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// inFlight is the context of one eviction or resize the loop started: it
// keeps ctx's values but not its cancellation, so that a request in
// flight when the updater stops completes (within requestTimeout) and its
// outcome is recorded, instead of being abandoned with the API server's
// answer unknown.
func inFlight(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
}

// inPlace resizes the candidates it can and returns those to evict instead.
func (u *Updater) inPlace(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler, mode vpav1.UpdateMode, size string, restr *update.Restrictions, candidates []candidate) []candidate {
	logger := klog.FromContext(ctx)
	m := u.d.Metrics
	now := u.d.Clock.Now()
	var toEvict []candidate
	updatable, updated := 0, 0
	for _, c := range candidates {
		pod := c.pod
		rec, hasRec := inplace.Read(pod)
		if update.Resizing(pod) && !u.cfg.DryRun {
			if mode == vpav1.UpdateModeInPlace && update.ResizeInfeasible(pod) {
				r, err := u.d.Resizer.MarkInfeasible(ctx, pod, now)
				if err != nil {
					logger.Error(err, "Recording an infeasible resize", "pod", klog.KObj(pod))
				} else {
					rec, hasRec = r, true
				}
			} else if err := u.d.Resizer.RecordSeen(ctx, pod, now); err != nil {
				logger.Error(err, "Recording a resize in progress", "pod", klog.KObj(pod))
			}
		}
		cached := hasRec && rec.Current(pod) && inplace.InfeasibleRulesOut(rec, c.requests)
		decision := restr.CanInPlaceUpdate(pod, mode, true, cached)
		switch decision {
		case update.InPlaceInfeasibleCached:
			m.InfeasibleSkips.WithLabelValues(size, vpa.Name, vpa.Namespace).Inc()
			u.d.Recorder.Event(pod, corev1.EventTypeNormal, ReasonInPlaceResizeSkipped,
				"In-place resize skipped: an earlier attempt was infeasible and the recommendation is not lower.")
			continue
		case update.InPlaceEvict:
			toEvict = append(toEvict, c)
			continue
		case update.InPlaceDeferred:
			if mode != vpav1.UpdateModeInPlace || !update.Resizing(pod) {
				continue
			}
			// InPlace: patch again so a changed recommendation gets in,
			// unless the pending resize already asks for it.
			if sameAsSpec(u.view(pod), c.requests) {
				continue
			}
		}
		updatable++
		if u.cfg.DryRun {
			u.dryRun(vpa, c, "in-place", ReasonDryRunInPlaceResize)
			restr.RecordInPlaceUpdate(pod)
			continue
		}
		if stopping(ctx) {
			logger.V(2).Info("Updater stopping; the remaining in-place updates are left to the next leader's loop")
			break
		}
		if err := u.inPlaceLimiter.Wait(ctx); err != nil {
			if stopping(ctx) {
				break
			}
			m.FailedInPlaceUpdates.WithLabelValues(size, "InPlaceUpdateRateLimiterWaitFailed", vpa.Name, vpa.Namespace).Inc()
			break
		}
		reqCtx, cancel := inFlight(ctx)
		requested, err := u.d.Resizer.Resize(reqCtx, pod, c.resources, c.observed, now)
		cancel()
		if err != nil && requested == nil {
			reason := "InPlaceUpdateError"
			if isNodeCapacity(err) {
				reason = "InPlaceUpdateInfeasible"
				// InPlace: the refused requests are not retried until the
				// recommendation lowers one of them (upstream 1.8's
				// isInfeasibleError).
				if mode == vpav1.UpdateModeInPlace {
					if _, err := u.d.Resizer.MarkRefused(ctx, pod, c.requests, now); err != nil {
						logger.Error(err, "Recording a refused resize", "pod", klog.KObj(pod))
					}
				}
			}
			m.FailedInPlaceUpdates.WithLabelValues(size, reason, vpa.Name, vpa.Namespace).Inc()
			logger.Error(err, "Resizing pod in place", "pod", klog.KObj(pod))
			if mode == vpav1.UpdateModeInPlaceOrRecreate {
				toEvict = append(toEvict, c)
			}
			continue
		}
		if err != nil {
			logger.Error(err, "Pod resized, bookkeeping failed", "pod", klog.KObj(pod))
		}
		logger.Info("Resized pod in place", "pod", klog.KObj(pod), "reason", c.decision.Reason, "requests", inplace.Describe(requested))
		u.d.Recorder.Event(pod, corev1.EventTypeNormal, ReasonInPlaceResized, "Pod was resized in place by VPA Updater.")
		restr.RecordInPlaceUpdate(pod)
		updated++
		m.InPlaceUpdatedPods.WithLabelValues(size, vpa.Name, vpa.Namespace).Inc()
	}
	m.InPlaceUpdatablePods.WithLabelValues(size).Add(float64(updatable))
	if updatable > 0 {
		m.VPAsWithInPlaceUpdatable.WithLabelValues(size).Inc()
	}
	if updated > 0 {
		m.VPAsWithInPlaceUpdated.WithLabelValues(size).Inc()
	}
	return toEvict
}

// view is the pod the loop plans on: with NativeSidecars, its native
// sidecars follow its containers (sidecar.View).
func (u *Updater) view(pod *corev1.Pod) *corev1.Pod {
	if u.cfg.NativeSidecars {
		return sidecar.View(pod)
	}
	return pod
}

// unboost sets back in place the CPU of the boosted containers whose boost is
// over (the pod is Ready and the boost's duration has passed), and returns
// the pods left for the regular updates: those carrying no boost. A pod
// still boosted, or unboosted now, is left alone until a later loop.
//
// The pods to unboost are chosen one by one, within the disruption budget,
// then resized by up to BoostWorkers requests at once, each after the
// in-place rate limiter.
func (u *Updater) unboost(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler, size string, restr *update.Restrictions, lr limitrange.Merged,
	fit func(*corev1.Pod) recommendation.Fit, pods []*corev1.Pod) []*corev1.Pod {
	logger := klog.FromContext(ctx)
	m := u.d.Metrics
	now := u.d.Clock.Now()
	rest := pods[:0:0]
	type job struct {
		pod       *corev1.Pod
		resources []recommendation.ContainerResources
		expired   []string
		keys      []string
		err       error
	}
	var jobs []*job
	for _, pod := range pods {
		marks := boost.Containers(pod)
		if len(marks) == 0 {
			rest = append(rest, pod)
			continue
		}
		expired, remaining := boost.Expired(pod, vpa, now)
		if len(expired) == 0 {
			logger.V(5).Info("Pod still boosted", "pod", klog.KObj(pod), "remaining", remaining)
			continue
		}
		if !restr.CanUnboost(pod) {
			logger.V(5).Info("Boosted pod cannot be unboosted yet", "pod", klog.KObj(pod))
			continue
		}
		// Counted now, so that the next pod's CanUnboost sees it.
		restr.RecordInPlaceUpdate(pod)
		if u.cfg.DryRun {
			u.d.Metrics.DryRunDecisions.WithLabelValues("unboost").Inc()
			u.d.Recorder.Event(pod, corev1.EventTypeNormal, ReasonDryRunInPlaceResize, "Dry run: VPA Updater would end the CPU startup boost of this pod in place.")
			continue
		}
		keys := make([]string, len(expired))
		for i, name := range expired {
			keys[i] = boost.Annotation(name)
		}
		view := u.view(pod)
		var f recommendation.Fit
		if fit != nil {
			f = fit(view)
		}
		jobs = append(jobs, &job{pod: pod, resources: unboosted(view, vpa, lr, f, expired, marks), expired: expired, keys: keys})
	}

	workers := max(u.cfg.BoostWorkers, 1)
	slots := make(chan struct{}, workers)
	var wg sync.WaitGroup
	started := 0
	for _, j := range jobs {
		if stopping(ctx) {
			break
		}
		if err := u.inPlaceLimiter.Wait(ctx); err != nil {
			if !stopping(ctx) {
				m.FailedInPlaceUpdates.WithLabelValues(size, "InPlaceUpdateRateLimiterWaitFailed", vpa.Name, vpa.Namespace).Inc()
			}
			break
		}
		slots <- struct{}{}
		started++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			reqCtx, cancel := inFlight(ctx)
			defer cancel()
			j.err = u.d.Resizer.Unboost(reqCtx, j.pod, j.resources, j.keys)
		}()
	}
	wg.Wait()
	for _, j := range jobs[:started] {
		if j.err != nil {
			m.FailedInPlaceUpdates.WithLabelValues(size, "UnboostError", vpa.Name, vpa.Namespace).Inc()
			logger.Error(j.err, "Ending the startup boost of pod", "pod", klog.KObj(j.pod))
			continue
		}
		logger.Info("Ended the startup boost in place", "pod", klog.KObj(j.pod), "containers", j.expired)
		u.d.Recorder.Event(j.pod, corev1.EventTypeNormal, ReasonInPlaceResized, "Pod was resized in place by VPA Updater.")
		m.InPlaceUpdatedPods.WithLabelValues(size, vpa.Name, vpa.Namespace).Inc()
	}
	return rest
}

// unboosted returns, per container of pod (same index), what an expired
// boost gives way to: the VPA's recommendation as the admission controller
// would apply it, unless the VPA is Off or has none for the container, and
// then the resources recorded before the boost.
func unboosted(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged, fit recommendation.Fit, expired []string, marks map[string]string) []recommendation.ContainerResources {
	out := make([]recommendation.ContainerResources, len(pod.Spec.Containers))
	var plan recommendation.Plan
	if vpav1.GetUpdateMode(vpa).PatchesNewPods() {
		plan = recommendation.PlanForPodFit(recommendation.Baseline(pod), vpa, lr, fit)
	}
	for _, name := range expired {
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name != name {
				continue
			}
			if i < len(plan.Containers) {
				if _, ok := plan.Containers[i].Requests[corev1.ResourceCPU]; ok {
					out[i] = plan.Containers[i]
					break
				}
			}
			orig, err := boost.Decode(marks[name])
			if err != nil {
				break
			}
			r := recommendation.ContainerResources{}
			if q, ok := orig.Requests[corev1.ResourceCPU]; ok {
				r.Requests = corev1.ResourceList{corev1.ResourceCPU: q}
				if l, ok := orig.Limits[corev1.ResourceCPU]; ok {
					r.Limits = corev1.ResourceList{corev1.ResourceCPU: l}
				}
			}
			out[i] = r
			break
		}
	}
	return out
}

func (u *Updater) dryRun(vpa *vpav1.VerticalPodAutoscaler, c candidate, action, reason string) {
	u.d.Metrics.DryRunDecisions.WithLabelValues(action).Inc()
	msg := fmt.Sprintf("Dry run: VPA Updater would %s this pod (%s, relative change %.2f) to set requests %s.",
		action, c.decision.Reason, c.decision.ResourceDiff, inplace.Describe(c.requests))
	u.d.Recorder.Event(c.pod, corev1.EventTypeNormal, reason, msg)
	klog.Background().Info("Dry run decision", "pod", klog.KObj(c.pod), "vpa", klog.KObj(vpa), "action", action,
		"reason", c.decision.Reason, "requests", inplace.Describe(c.requests))
}

// sameAsSpec reports whether the pod spec already requests these values.
func sameAsSpec(pod *corev1.Pod, requests map[string]corev1.ResourceList) bool {
	for _, ctr := range pod.Spec.Containers {
		want, ok := requests[ctr.Name]
		if !ok {
			continue
		}
		for name, q := range want {
			have, ok := ctr.Resources.Requests[name]
			if !ok || have.Cmp(q) != 0 {
				return false
			}
		}
	}
	return true
}

// limitRangeConflict reports a pod whose plan gave way to the LimitRanges: a
// log line and an event on the VPA (the recorder's correlator folds repeats).
// The line repeats every loop while the conflict lasts: V(5), above the
// default verbosity.
func (u *Updater) limitRangeConflict(logger klog.Logger, vpa *vpav1.VerticalPodAutoscaler, pod *corev1.Pod, plan recommendation.Plan) {
	msg := "not updated: the namespace's LimitRanges would refuse the pod with the recommendation"
	if plan.PolicyOverridden {
		msg = "requests capped to the namespace's LimitRanges past the VPA's resource policy, which they do not admit"
	}
	logger.V(5).Info("Recommendation gave way to LimitRanges", "pod", klog.KObj(pod), "reason", plan.ConflictReason(), "conflict", plan.Why())
	u.d.Metrics.LimitRangeConflicts.WithLabelValues(plan.ConflictReason()).Inc()
	u.d.Recorder.Eventf(vpa, corev1.EventTypeWarning, plan.ConflictReason(), "Pod %s %s (%s)", pod.Name, msg, plan.Why())
}

// quotaConflict reports a pod left as it is because of the namespace's
// ResourceQuotas: a log line and an event on the VPA (the recorder's
// correlator folds repeats).
func (u *Updater) quotaConflict(logger klog.Logger, vpa *vpav1.VerticalPodAutoscaler, pod *corev1.Pod, why string) {
	logger.V(2).Info("Pod not updated: ResourceQuota", "pod", klog.KObj(pod), "why", why)
	u.d.Recorder.Eventf(vpa, corev1.EventTypeWarning, recommendation.ReasonResourceQuotaConflict, "Pod %s not updated: %s", pod.Name, why)
}
