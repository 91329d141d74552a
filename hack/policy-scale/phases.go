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

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
	"github.com/openvpa/openvpa/recommender/policy"
)

const (
	writesMetric = "vpa_recommender_policy_vpa_writes_total"
	errorsMetric = "vpa_recommender_policy_reconcile_errors_total"
)

// memory is one phase's memory samples.
type memory struct {
	vmRSS, metricRSS, heap stats
}

// policyStatus is what the report shows of the policy's status.
type policyStatus struct {
	selected, managed, conflicts int32
	ready                        string
}

func statusOf(p *policyv1alpha1.VerticalPodAutoscalerPolicy) policyStatus {
	s := policyStatus{selected: p.Status.SelectedWorkloads, managed: p.Status.ManagedVPAs, conflicts: p.Status.Conflicts, ready: "none"}
	if c := meta.FindStatusCondition(p.Status.Conditions, policyv1alpha1.ConditionReady); c != nil {
		s.ready = fmt.Sprintf("%s/%s (%q, observed generation %d of %d)", c.Status, c.Reason, c.Message, c.ObservedGeneration, p.Generation)
	}
	return s
}

// results are one run's figures.
type results struct {
	logPath string
	started time.Duration // process start to the controller's caches synced

	baseline       memory
	baselineWrites map[string]float64

	// creation: from the policy's Create call returning.
	firstVPA, allVPAs time.Duration
	creation          verdict
	creationWrites    map[string]float64
	creationEvents    eventCounts
	creationPeak      float64 // VmRSS
	statusSettled     time.Duration
	statusAfterCreate policyStatus

	// steady state.
	steadyWindow    time.Duration
	intervalWrites  []map[string]float64
	steadyWrites    map[string]float64
	steadyEvents    eventCounts
	versionsChanged [3]int // changed, added, removed
	steadyVPAs      int
	policyRVChanged bool
	steady          memory
	statusAfter     policyStatus

	// deletion, when measured.
	deleted       bool
	deleteElapsed time.Duration
	deletion      verdict
	deleteWrites  map[string]float64
	deleteEvents  eventCounts

	reconcileErrors float64
	errorLines      int
	firstErrors     []string
}

// measure runs the recommender through the phases. It returns what it has
// measured so far with an error.
func measure(ctx context.Context, cl *cluster, bin string) (*results, error) {
	c := cl.c
	res := &results{}
	wctx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	w, err := watchManaged(wctx, cl.vpas, c.namespaceList(), c.managedSelector())
	if err != nil {
		return nil, err
	}
	if err := w.waitSynced(ctx); err != nil {
		return nil, err
	}
	if n, _, _, _, _ := w.state(); n != 0 {
		return nil, fmt.Errorf("%d VPAs of policy %s exist already (pass --reuse to remove them)", n, c.policy)
	}

	start := time.Now()
	r, err := startRecommender(c, bin)
	if err != nil {
		return nil, err
	}
	res.logPath = r.logPath
	defer func() {
		r.stop()
		res.errorLines, res.firstErrors = readErrorLines(r.logPath, 5)
	}()
	s := &sampler{pid: r.proc.Cmd.Process.Pid, url: r.url}
	sctx, cancelSampler := context.WithCancel(ctx)
	defer cancelSampler()
	go s.run(sctx)

	// The caches are warm when the controller has started and every kind's
	// workload cache has synced.
	readyCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	err = waitUntil(readyCtx, time.Second, func() (bool, error) {
		if err := r.alive(); err != nil {
			return false, err
		}
		if r.logCount(`"Policy controller started"`) == 0 || r.logCount(`"Watching workloads"`) < len(policy.DefaultKinds()) {
			return false, nil
		}
		_, err := scrape(r.url)
		return err == nil, nil
	})
	cancel()
	if err != nil {
		return res, fmt.Errorf("waiting for the policy controller's caches: %w", err)
	}
	res.started = time.Since(start)
	logf("policy controller started, caches synced after %s; sampling memory for %s", res.started.Round(100*time.Millisecond), c.baseline)

	// Baseline: the caches hold the Deployments and ReplicaSets, no policy.
	t0 := time.Now()
	if err := sleep(ctx, r, c.baseline); err != nil {
		return res, err
	}
	res.baseline = s.phase(t0, time.Now())
	m, err := scrape(r.url)
	if err != nil {
		return res, err
	}
	res.baselineWrites = m.byLabel(writesMetric, "verb")
	logf("baseline: VmRSS mean %s (max %s), heap in use %s, writes %s",
		mb(res.baseline.vmRSS.mean), mb(res.baseline.vmRSS.max), mb(res.baseline.heap.mean), formatCounts(res.baselineWrites))

	// Creation.
	w.expect(c.workloads)
	_, ev0, _, _, _ := w.state()
	if _, err := cl.createPolicy(ctx); err != nil {
		return res, err
	}
	created := time.Now()
	logf("created policy %s; waiting for %d managed VPAs (N / QPS = %s)", c.policy, c.workloads,
		time.Duration(float64(c.workloads)/c.qps*float64(time.Second)).Round(time.Second))
	limit := 3*time.Duration(float64(c.workloads)/c.qps*float64(time.Second)) + 5*time.Minute
	cctx, cancel := context.WithTimeout(ctx, limit)
	lastLog, lastN := time.Now(), 0
	err = waitUntil(cctx, time.Second, func() (bool, error) {
		if err := r.alive(); err != nil {
			return false, err
		}
		n, _, _, reached, _ := w.state()
		if !reached.IsZero() {
			return true, nil
		}
		if time.Since(lastLog) >= 15*time.Second {
			rate := float64(n-lastN) / time.Since(lastLog).Seconds()
			logf("managed VPAs %d/%d (%.1f/s over the last %s)", n, c.workloads, rate, time.Since(lastLog).Round(time.Second))
			lastLog, lastN = time.Now(), n
		}
		return false, nil
	})
	cancel()
	if err != nil {
		n, _, _, _, _ := w.state()
		return res, fmt.Errorf("waiting for %d managed VPAs, %d after %s: %w", c.workloads, n, time.Since(created).Round(time.Second), err)
	}
	_, _, first, reached, _ := w.state()
	res.firstVPA, res.allVPAs = first.Sub(created), reached.Sub(created)
	res.creation = judge(res.allVPAs, c.workloads, c.burst, c.qps, c.tolerance)
	logf("all %d managed VPAs exist %s after the policy's creation (first after %s); %.3f x N/QPS",
		c.workloads, res.allVPAs.Round(100*time.Millisecond), res.firstVPA.Round(10*time.Millisecond), res.creation.ratio)

	// The policy's status catches up.
	stctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	var last *policyv1alpha1.VerticalPodAutoscalerPolicy
	err = waitUntil(stctx, time.Second, func() (bool, error) {
		p, err := cl.getPolicy(stctx)
		if err != nil {
			return false, err
		}
		last = p
		return p.Status.ManagedVPAs == int32(c.workloads) && p.Status.SelectedWorkloads == int32(c.workloads) &&
			meta.IsStatusConditionTrue(p.Status.Conditions, policyv1alpha1.ConditionReady) &&
			p.Status.ObservedGeneration == p.Generation, nil
	})
	cancel()
	if last != nil {
		res.statusAfterCreate = statusOf(last)
	}
	if err != nil {
		return res, fmt.Errorf("waiting for the policy's status (last: %+v): %w", res.statusAfterCreate, err)
	}
	res.statusSettled = time.Since(created)
	steadyStart := time.Now()
	res.creationPeak = s.phase(created, steadyStart).vmRSS.max
	m, err = scrape(r.url)
	if err != nil {
		return res, err
	}
	writes := m.byLabel(writesMetric, "verb")
	res.creationWrites = delta(res.baselineWrites, writes)
	_, ev1, _, _, _ := w.state()
	res.creationEvents = ev1.sub(ev0)
	logf("policy status settled %s after its creation: %+v; writes %s; watch events %+v",
		res.statusSettled.Round(100*time.Millisecond), res.statusAfterCreate, formatCounts(res.creationWrites), res.creationEvents)

	// Steady state.
	v0, err := cl.managedVersions(ctx)
	if err != nil {
		return res, err
	}
	p0, err := cl.getPolicy(ctx)
	if err != nil {
		return res, err
	}
	logf("steady state: %d intervals of %s", c.intervals, c.interval)
	prev := writes
	for i := range c.intervals {
		if err := sleep(ctx, r, c.interval); err != nil {
			return res, err
		}
		m, err := scrape(r.url)
		if err != nil {
			return res, err
		}
		cur := m.byLabel(writesMetric, "verb")
		d := delta(prev, cur)
		res.intervalWrites = append(res.intervalWrites, d)
		vm, _, _ := s.between(time.Now().Add(-c.interval), time.Now())
		logf("interval %d/%d: writes %s; RSS %s", i+1, c.intervals, formatCounts(d), mb(vm.last))
		prev = cur
	}
	steadyEnd := time.Now()
	res.steadyWindow = steadyEnd.Sub(steadyStart)
	res.steadyWrites = delta(writes, prev)
	_, ev2, _, _, _ := w.state()
	res.steadyEvents = ev2.sub(ev1)
	v1, err := cl.managedVersions(ctx)
	if err != nil {
		return res, err
	}
	ch, add, rm := versionChanges(v0, v1)
	res.versionsChanged, res.steadyVPAs = [3]int{ch, add, rm}, len(v1)
	p1, err := cl.getPolicy(ctx)
	if err != nil {
		return res, err
	}
	res.policyRVChanged = p0.ResourceVersion != p1.ResourceVersion
	res.statusAfter = statusOf(p1)
	res.steady = s.phase(steadyStart, steadyEnd)
	logf("steady state over %s: writes %s; watch events %+v; resource versions changed %d, added %d, removed %d; policy changed %v",
		res.steadyWindow.Round(time.Second), formatCounts(res.steadyWrites), res.steadyEvents, ch, add, rm, res.policyRVChanged)

	if c.deletePolicy {
		w.expect(0)
		if err := deleteAndWait(ctx, cl, r, w, res); err != nil {
			return res, err
		}
	}
	if m, err := scrape(r.url); err == nil {
		res.reconcileErrors = m[errorsMetric]
	}
	return res, nil
}

// deleteAndWait deletes the policy and waits until its VPAs are gone.
func deleteAndWait(ctx context.Context, cl *cluster, r *recommender, w *vpaWatch, res *results) error {
	c := cl.c
	m, err := scrape(r.url)
	if err != nil {
		return err
	}
	before := m.byLabel(writesMetric, "verb")
	_, ev0, _, _, _ := w.state()
	started := time.Now()
	if err := cl.vpas.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Delete(ctx, c.policy, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting policy %s: %w", c.policy, err)
	}
	logf("deleted policy %s; waiting for its VPAs to go", c.policy)
	limit := 3*time.Duration(float64(c.workloads)/c.qps*float64(time.Second)) + 5*time.Minute
	dctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	lastLog := time.Now()
	err = waitUntil(dctx, time.Second, func() (bool, error) {
		if err := r.alive(); err != nil {
			return false, err
		}
		n, _, _, _, empty := w.state()
		if n == 0 && !empty.IsZero() {
			return true, nil
		}
		if time.Since(lastLog) >= 15*time.Second {
			logf("managed VPAs left: %d", n)
			lastLog = time.Now()
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the policy's VPAs to go: %w", err)
	}
	_, ev1, _, _, empty := w.state()
	res.deleted = true
	res.deleteElapsed = empty.Sub(started)
	res.deletion = judge(res.deleteElapsed, c.workloads, c.burst, c.qps, c.tolerance)
	res.deleteEvents = ev1.sub(ev0)
	if m, err = scrape(r.url); err == nil {
		res.deleteWrites = delta(before, m.byLabel(writesMetric, "verb"))
	}
	logf("every VPA of the policy gone %s after its deletion; writes %s", res.deleteElapsed.Round(100*time.Millisecond), formatCounts(res.deleteWrites))
	return nil
}

// phase summarises the memory samples of [from, to].
func (s *sampler) phase(from, to time.Time) memory {
	a, b, h := s.between(from, to)
	return memory{vmRSS: a, metricRSS: b, heap: h}
}

// sleep waits for d, failing early if the recommender exits.
func sleep(ctx context.Context, r *recommender, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-r.proc.Done:
		return r.alive()
	case <-t.C:
		return nil
	}
}

// readErrorLines counts klog's error lines in a log, and returns the first few.
func readErrorLines(path string, keep int) (int, []string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, nil
	}
	return errorLines(string(b), keep)
}

// errorLines counts the lines of klog's error severity (E1205 15:04:05...)
// and returns the first keep of them.
func errorLines(log string, keep int) (int, []string) {
	n := 0
	var first []string
	for line := range strings.SplitSeq(log, "\n") {
		if len(line) < 5 || line[0] != 'E' || strings.Trim(line[1:5], "0123456789") != "" {
			continue
		}
		n++
		if len(first) < keep {
			first = append(first, line)
		}
	}
	return n, first
}

// report prints the results as Markdown.
func report(out io.Writer, c config, r *results) {
	n := c.workloads
	fmt.Fprintf(out, "\n## policy-scale: %d Deployments in %d namespace(s), one policy, --kube-api-qps=%g --kube-api-burst=%d\n\n", n, c.namespaces, c.qps, c.burst)
	fmt.Fprintf(out, "recommender log: %s; process start to the controller's caches synced: %s\n\n", r.logPath, r.started.Round(100*time.Millisecond))
	fmt.Fprintln(out, "| figure | value |")
	fmt.Fprintln(out, "|---|---|")
	row := func(k, f string, a ...any) { fmt.Fprintf(out, "| %s | %s |\n", k, fmt.Sprintf(f, a...)) }
	if r.allVPAs > 0 {
		pass := "FAIL"
		if r.creation.within {
			pass = "pass"
		}
		row("policy created → all N managed VPAs exist (watch)", "%.1f s (first after %.2f s)", r.allVPAs.Seconds(), r.firstVPA.Seconds())
		row("N / QPS; ratio; the rate limiter's floor (N − burst) / QPS", "%.0f s; %.3f (%s, tolerance ±%.0f%%); %.0f s",
			r.creation.ideal.Seconds(), r.creation.ratio, pass, 100*c.tolerance, r.creation.floor.Seconds())
		row("writes while creating (controller's counter)", "%s", formatCounts(r.creationWrites))
		row("watch events on managed VPAs while creating", "adds %d, updates %d, deletes %d", r.creationEvents.adds, r.creationEvents.updates, r.creationEvents.deletes)
		row("policy status settled (after its creation)", "%.1f s", r.statusSettled.Seconds())
	}
	if len(r.intervalWrites) > 0 {
		quiet := 0
		for _, d := range r.intervalWrites {
			if len(d) == 0 {
				quiet++
			}
		}
		row("steady state: intervals without a write", "%d of %d (%s each, %.0f s in all)", quiet, len(r.intervalWrites), c.interval, r.steadyWindow.Seconds())
		row("steady state: writes", "%s", formatCounts(r.steadyWrites))
		row("steady state: watch events on managed VPAs", "adds %d, updates %d, deletes %d", r.steadyEvents.adds, r.steadyEvents.updates, r.steadyEvents.deletes)
		row("steady state: resource versions (listed at start and end)", "%d VPAs; changed %d, added %d, removed %d; policy object changed: %v",
			r.steadyVPAs, r.versionsChanged[0], r.versionsChanged[1], r.versionsChanged[2], r.policyRVChanged)
		row("policy status", "selected %d, managed %d, conflicts %d; Ready %s", r.statusAfter.selected, r.statusAfter.managed, r.statusAfter.conflicts, r.statusAfter.ready)
	}
	if r.baseline.vmRSS.n > 0 {
		row("RSS before the policy (caches warm with N Deployments and ReplicaSets)", "VmRSS mean %s (min %s, max %s, %d samples); heap in use %s",
			mb(r.baseline.vmRSS.mean), mb(r.baseline.vmRSS.min), mb(r.baseline.vmRSS.max), r.baseline.vmRSS.n, mb(r.baseline.heap.mean))
	}
	if r.creationPeak > 0 {
		row("peak VmRSS while creating", "%s", mb(r.creationPeak))
	}
	if r.steady.vmRSS.n > 0 {
		row("RSS in the steady state (all N VPAs exist)", "VmRSS mean %s (min %s, max %s, %d samples); heap in use %s",
			mb(r.steady.vmRSS.mean), mb(r.steady.vmRSS.min), mb(r.steady.vmRSS.max), r.steady.vmRSS.n, mb(r.steady.heap.mean))
		d := r.steady.vmRSS.mean - r.baseline.vmRSS.mean
		row("memory per workload, delta: (steady − before) / N", "VmRSS %s (%s in all); heap in use %s",
			perWorkload(d, n), mb(d), perWorkload(r.steady.heap.mean-r.baseline.heap.mean, n))
		row("memory per workload, total: steady / N", "VmRSS %s", perWorkload(r.steady.vmRSS.mean, n))
	}
	if r.deleted {
		row("policy deleted → all its VPAs gone (watch)", "%.1f s (%.3f × N/QPS)", r.deleteElapsed.Seconds(), r.deletion.ratio)
		row("writes while deleting", "%s; watch deletes %d", formatCounts(r.deleteWrites), r.deleteEvents.deletes)
	}
	row("reconcile errors (counter); error lines in the log", "%g; %d", r.reconcileErrors, r.errorLines)
	for _, l := range r.firstErrors {
		fmt.Fprintf(out, "\n    %s", l)
	}
	fmt.Fprintln(out)
}
