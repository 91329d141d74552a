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

// Package faults tests what operators do to OpenVPA every week, on the local cluster's real node
// with deploy/ installed as shipped: rolling upgrades of each component, the admission controller
// hung, scaled to zero and uninstalled, kubelet, containerd, kube-apiserver and etcd restarts,
// every container killed, a metrics-server outage and a drain. Throughout, a prober creates a
// dry-run pod of a workload with a recommendation every 200 ms and checks that the admission chain
// gave it the recommendation. During the rollouts, the updater keeps evicting a churn workload,
// and every eviction the API server answers is counted by response code.
//
// Like e2e/realnode, the components act on every namespace and the faults stop parts of the
// cluster: hack/test.sh runs this package alone.
package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/e2e/framework"
)

const (
	system = framework.ShippedNamespace
	// webhookConfig is the registration deploy/ ships and the admission controller keeps.
	webhookConfig = "vpa-webhook-config"
	// webhookTimeout is deploy/'s --webhook-timeout-seconds.
	webhookTimeout = 5 * time.Second
	// outage is how long metrics-server stays down.
	outage = 10 * time.Minute
	// recommenderMetrics is the recommender's metrics port.
	recommenderMetrics = 8942
)

type suite struct {
	e     *framework.Shipped
	c     *framework.Cluster
	ns    string
	probe *prober
}

func TestFaults(t *testing.T) {
	e := framework.InstallShipped(t)
	s := &suite{e: e, c: e.C, ns: e.C.NewNamespace(t)}
	e.CreateWorkload(t, framework.MemhogOnRealNode(s.ns, "web", []string{"--memory=40Mi", "--cpu=50m"},
		framework.Resources("10m", "10Mi"), nil), vpav1.UpdateModeInitial)
	e.Target(t, s.ns, "web", 4*framework.ShippedLoopInterval, nil)
	// Every replica's informer has the recommendation once several probes in a row are patched.
	inARow := 0
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		pod, err := s.c.DryRunPod(s.ns, "web")
		if err != nil || pod.Annotations["vpaUpdates"] == "" {
			inARow = 0
			return false, err
		}
		inARow++
		return inARow >= 10, nil
	})
	s.probe = &prober{client: s.c.Client, ns: s.ns, deploy: "web"}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.probe.run(ctx)

	// Each rollout changes the Deployment's arguments, as an upgrade does. The recommender's
	// also writes checkpoints every 30 s, which the restarts below compare. Meanwhile the
	// updater keeps evicting the churn workload's pods.
	churn := s.startChurn(t)
	for _, r := range []struct{ name, lease, arg string }{
		{"vpa-admission-controller", "", "--v=3"},
		{"vpa-recommender", "vpa-recommender-lease", "--checkpoints-write-interval=30s"},
		{"vpa-updater", "vpa-updater", "--v=3"},
	} {
		t.Run("rolling upgrade of "+r.name, func(t *testing.T) { s.rollout(t, r.name, r.lease, r.arg, churn) })
	}
	churn.stop(t)
	t.Run("metrics-server down, the admission controller hung and scaled to zero meanwhile", s.metricsOutage)
	t.Run("kubelet, containerd and every container restarted", s.nodeRestarts)
	for _, proc := range []string{"kube-apiserver", "etcd"} {
		t.Run(proc+" stopped for 30 s", func(t *testing.T) { s.controlPlaneOutage(t, proc) })
	}
	t.Run("kubectl drain with the shipped disruption budgets", s.drain)
	t.Run("uninstall as docs/uninstall.md says", s.uninstall)
}

// rollout adds arg to the component's container and waits for the rollout: no probe pod goes
// unpatched, the Lease (if any) passes from holder to holder within the lease duration, and from
// the start of the rollout to the first eviction after it, no eviction fails.
func (s *suite) rollout(t *testing.T, name, lease, arg string, ch *churn) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var handovers chan []handover
	if lease != "" {
		handovers = make(chan []handover, 1)
		go func() { handovers <- s.watchLease(ctx, lease) }()
	}
	start := time.Now()
	evictions := s.evictionsSince(t, nil)
	s.c.Kubectl(t, "patch", "deployment", name, "-n", system, "--type=json",
		"-p", fmt.Sprintf(`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":%q}]`, arg))
	s.e.WaitRolledOut(t, name, 4*time.Minute)
	if lease != "" {
		s.waitLeaderAmong(t, lease, name)
		cancel()
		hs := <-handovers
		if len(hs) == 0 {
			t.Errorf("%s: no handover seen", lease)
		}
		for _, h := range hs {
			t.Logf("%s: %s → %s, %v after the last renewal", lease, h.from, h.to, h.gap.Round(100*time.Millisecond))
			if h.gap > framework.ShippedLeaseDuration {
				t.Errorf("%s handed over %v after its last renewal, more than the lease duration %v", lease, h.gap, framework.ShippedLeaseDuration)
			}
		}
	}
	s.evictionAfterRollout(t)
	ev, st := s.evictionsSince(t, evictions), ch.state()
	t.Logf("evictions from the start of the rollout of %s to the first after it, by response code: %s (updater pods read %d, recommendations written %d, last churn error %v)",
		name, describeCodes(ev), st.read, st.flips, st.err)
	for code, n := range ev {
		if code != "201" {
			t.Errorf("the API server answered %v evictions with %s during the rollout of %s", n, code, name)
		}
	}
	if len(st.failed) > 0 {
		t.Errorf("updater pods counted failed evictions: %v", st.failed)
	}
	w := s.probe.window(start, time.Now())
	t.Logf("during the rollout of %s: %v", name, w)
	if w.created == 0 || w.unpatched != 0 || w.failed != 0 {
		t.Errorf("rollout of %s: %v (last error %v); want pods, all patched", name, w, w.lastErr)
	}
}

// evictionAfterRollout waits for an eviction after the rollout: the churn keeps pods due, so
// the updater's next loop evicts one, and the window of the rollout's counts spans at least one
// loop of the updater's leader.
func (s *suite) evictionAfterRollout(t *testing.T) {
	rolledOut := s.evictionsSince(t, nil)
	framework.WaitFor(t, framework.ShippedLoopInterval+framework.ShippedLeaseDuration+time.Minute, func() (bool, error) {
		now, err := s.evictionCodes(context.Background())
		if err != nil {
			return false, err
		}
		if now["201"] > rolledOut["201"] {
			return true, nil
		}
		return false, fmt.Errorf("no eviction since the rollout; evictions by code: %s", describeCodes(now))
	})
}

type handover struct {
	from, to string
	gap      time.Duration
}

// watchLease polls the Lease until ctx ends and returns each change of holder, with the time
// from the old holder's last renewal to the new one's acquisition.
func (s *suite) watchLease(ctx context.Context, name string) []handover {
	var out []handover
	var holder string
	var renewed time.Time
	for ctx.Err() == nil {
		l, err := s.c.Client.CoordinationV1().Leases(system).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			h := ptr.Deref(l.Spec.HolderIdentity, "")
			switch {
			case h == "":
			case h == holder:
				renewed = microTime(l.Spec.RenewTime)
			default:
				if holder != "" {
					out = append(out, handover{from: holder, to: h, gap: microTime(l.Spec.AcquireTime).Sub(renewed)})
				}
				holder, renewed = h, microTime(l.Spec.RenewTime)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return out
}

func microTime(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// waitLeaderAmong waits until a current pod of the Deployment holds the Lease.
func (s *suite) waitLeaderAmong(t *testing.T, lease, deployment string) {
	framework.WaitFor(t, framework.ShippedLeaseDuration+time.Minute, func() (bool, error) {
		l, err := s.c.Client.CoordinationV1().Leases(system).Get(context.Background(), lease, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return holderIsOneOf(l, s.e.Pods(t, system, "app="+deployment)), nil
	})
}

func holderIsOneOf(l *coordinationv1.Lease, pods []corev1.Pod) bool {
	pod, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
	for _, p := range pods {
		if p.Name == pod && p.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// metricsOutage stops metrics-server for 10 minutes. The recommendation stays, the failed reads
// show in the recommender's metrics, and its memory stays flat. Meanwhile the admission
// controller is hung (SIGSTOP), crashed (SIGKILL) and then scaled to zero: no pod creation waits
// longer than the webhook's timeout, and with no replica left the registration is gone.
func (s *suite) metricsOutage(t *testing.T) {
	const errorsSeries = `vpa_recommender_metric_server_responses{client_name="metrics-server",is_error="true"}`
	// The failed-read series appears with the first failure: absent reads as 0.
	errorsBefore, _ := s.e.LeaderMetric("vpa-recommender-lease", recommenderMetrics, errorsSeries)
	rssBefore := s.leaderMetric(t, "process_resident_memory_bytes")
	start := time.Now()
	s.c.StopProcess(t, "metrics-server")
	restarted := false
	defer func() {
		if !restarted {
			s.c.StartStopped(t)
		}
	}()

	t.Run("admission controller hung", s.admissionHung)
	t.Run("admission controller crashed", s.admissionCrashed)
	t.Run("admission controller scaled to zero", s.admissionScaledToZero)

	timer := time.NewTimer(time.Until(start.Add(outage)))
	<-timer.C // the outage itself, not a synchronisation
	errorsAfter, err := s.e.LeaderMetric("vpa-recommender-lease", recommenderMetrics, errorsSeries)
	if err != nil {
		t.Fatal(err)
	}
	rssAfter := s.leaderMetric(t, "process_resident_memory_bytes")
	t.Logf("over %v without metrics-server: failed reads %v → %v, recommender RSS %.1f → %.1f MB",
		outage, errorsBefore, errorsAfter, rssBefore/1e6, rssAfter/1e6)
	if errorsAfter < errorsBefore+5 {
		t.Errorf("failed metrics reads %v → %v over %v: the outage does not show", errorsBefore, errorsAfter, outage)
	}
	if rssAfter > rssBefore+10e6 {
		t.Errorf("recommender RSS grew from %.1f to %.1f MB during the outage", rssBefore/1e6, rssAfter/1e6)
	}
	v, err := s.e.VPAs.AutoscalingV1().VerticalPodAutoscalers(s.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status.Recommendation == nil || len(v.Status.Recommendation.ContainerRecommendations) == 0 {
		t.Errorf("the recommendation was dropped during the metrics outage: %+v", v.Status)
	}
	s.c.StartStopped(t)
	restarted = true
}

// leaderMetric reads an unlabelled series from the recommender leader's metrics.
func (s *suite) leaderMetric(t *testing.T, series string) float64 {
	var v float64
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		var err error
		v, err = s.e.LeaderMetric("vpa-recommender-lease", recommenderMetrics, series)
		return err == nil, err
	})
	return v
}

// admissionHung stops every admission controller process for 30 s: pod creations wait at most
// the webhook's timeout.
func (s *suite) admissionHung(t *testing.T) {
	pids, err := framework.ProcessesNamed("vpa-admission-controller")
	if err != nil || len(pids) != 2 {
		t.Fatalf("admission controller processes %v: %v", pids, err)
	}
	start := time.Now()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	timer := time.NewTimer(30 * time.Second)
	<-timer.C // the fault's length
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	w := s.probe.window(start, time.Now())
	t.Logf("while the admission controller hung: %v", w)
	if w.created == 0 || w.slowest > webhookTimeout+2*time.Second {
		t.Errorf("while hung: %v; want creations held at most the webhook timeout %v", w, webhookTimeout)
	}
	s.waitPatched(t)
}

// admissionCrashed kills every admission controller process (SIGKILL), as a crash does: a
// crashed replica cannot remove the registration, yet no pod creation waits longer than the
// webhook's timeout, and once the kubelet has restarted both, pods are patched again.
func (s *suite) admissionCrashed(t *testing.T) {
	pids, err := framework.ProcessesNamed("vpa-admission-controller")
	if err != nil || len(pids) != 2 {
		t.Fatalf("admission controller processes %v: %v", pids, err)
	}
	before := s.e.Restarts(t)
	start := time.Now()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		pods, restarts := s.e.Pods(t, system, "app=vpa-admission-controller"), s.e.Restarts(t)
		for _, p := range pods {
			if restarts[p.Name] <= before[p.Name] || !framework.PodReady(&p) {
				return false, fmt.Errorf("%s: not yet restarted and ready", p.Name)
			}
		}
		return len(pods) == 2, nil
	})
	s.waitPatched(t)
	w := s.probe.window(start, time.Now())
	t.Logf("from the crash until both replicas were restarted and ready (%v): %v", time.Since(start).Round(time.Second), w)
	if w.created == 0 || w.slowest > webhookTimeout+2*time.Second {
		t.Errorf("while crashed: %v; want creations held at most the webhook timeout %v", w, webhookTimeout)
	}
}

// admissionScaledToZero: the last replica to stop removes the registration, so pod creation
// does not wait on a webhook that is gone; scaled up again, it registers again.
func (s *suite) admissionScaledToZero(t *testing.T) {
	s.c.Kubectl(t, "scale", "deployment/vpa-admission-controller", "-n", system, "--replicas=0")
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		return len(s.e.Pods(t, system, "app=vpa-admission-controller")) == 0, nil
	})
	s.requireRegistrationGone(t)
	start := time.Now()
	s.waitProbes(t, start, 50)
	w := s.probe.window(start, time.Now())
	t.Logf("with no admission controller: %v", w)
	if w.slowest > 2*time.Second {
		t.Errorf("with no admission controller: %v; a creation waited on the webhook", w)
	}
	s.c.Kubectl(t, "scale", "deployment/vpa-admission-controller", "-n", system, "--replicas=2")
	s.e.WaitRolledOut(t, "vpa-admission-controller", 3*time.Minute)
	s.waitPatched(t)
}

func (s *suite) requireRegistrationGone(t *testing.T) {
	_, err := s.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), webhookConfig, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the webhook registration outlived the admission controller (get: %v)", err)
	}
}

// waitProbes waits until n probes started after from have ended.
func (s *suite) waitProbes(t *testing.T, from time.Time, n int) {
	framework.WaitFor(t, time.Duration(n)*time.Second+time.Minute, func() (bool, error) {
		w := s.probe.window(from, time.Now())
		return w.created+w.failed >= n, nil
	})
}

// waitPatched waits until the probe's pods are patched again.
func (s *suite) waitPatched(t *testing.T) {
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		pod, err := s.c.DryRunPod(s.ns, "web")
		return err == nil && pod.Annotations["vpaUpdates"] != "", err
	})
}

// nodeRestarts restarts the kubelet, then containerd, then kills every container of the node:
// the checkpoint stays, and the next one the recommender writes continues its sample count.
func (s *suite) nodeRestarts(t *testing.T) {
	checkpoints := s.checkpointCount(t)
	for _, f := range []struct {
		name string
		do   func(t *testing.T)
	}{
		{"kubelet", func(t *testing.T) { s.c.StopProcess(t, "kubelet"); s.c.StartStopped(t) }},
		{"containerd", func(t *testing.T) { s.c.StopProcess(t, "containerd"); s.c.StartStopped(t) }},
		{"every container killed", s.killAllContainers},
	} {
		t.Run(f.name, func(t *testing.T) {
			s.waitCheckpoint(t, time.Now().Add(-time.Minute))
			samples, _ := s.e.CheckpointSamples(t, s.ns, "web")
			at := time.Now()
			f.do(t)
			for _, name := range framework.ShippedComponents {
				s.e.WaitRolledOut(t, name, 4*time.Minute)
			}
			after := s.waitCheckpoint(t, at)
			t.Logf("%s: checkpoint samples %d before, %d in the first checkpoint written after", f.name, samples, after)
			if after < samples {
				t.Errorf("%s: the checkpoint went from %d to %d samples: history was lost", f.name, samples, after)
			}
			if n := s.checkpointCount(t); n != checkpoints {
				t.Errorf("%s: %d checkpoints, %d before", f.name, n, checkpoints)
			}
		})
	}
}

// waitCheckpoint waits for a checkpoint of web written after since, and returns its sample
// count.
func (s *suite) waitCheckpoint(t *testing.T, since time.Time) int {
	var n int
	framework.WaitFor(t, 5*time.Minute, func() (bool, error) {
		var at time.Time
		n, at = s.e.CheckpointSamples(t, s.ns, "web")
		if n == 0 || !at.After(since.Truncate(time.Second)) {
			return false, fmt.Errorf("checkpoint with %d samples written %v", n, at)
		}
		return true, nil
	})
	return n
}

func (s *suite) checkpointCount(t *testing.T) int {
	l, err := s.e.VPAs.AutoscalingV1().VerticalPodAutoscalerCheckpoints(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// killAllContainers SIGKILLs every task of the node's containerd, sandboxes included.
func (s *suite) killAllContainers(t *testing.T) {
	ctr := filepath.Join(s.c.BinDir, "ctr")
	sock := filepath.Join(s.c.Dir, "node", "containerd.sock")
	out, err := exec.Command(ctr, "--address", sock, "-n", "k8s.io", "tasks", "ls", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr tasks ls: %v\n%s", err, out)
	}
	ids := strings.Fields(string(out))
	for _, id := range ids {
		if out, err := exec.Command(ctr, "--address", sock, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id).CombinedOutput(); err != nil && !strings.Contains(string(out), "not found") {
			t.Logf("killing task %s: %v\n%s", id, err, out)
		}
	}
	t.Logf("killed %d containers", len(ids))
}

// controlPlaneOutage stops proc for 30 s in the middle of the loops: no component crash-loops,
// writes resume, the checkpoint continues.
func (s *suite) controlPlaneOutage(t *testing.T, proc string) {
	checkpoints := s.checkpointCount(t)
	samples, _ := s.e.CheckpointSamples(t, s.ns, "web")
	restarts := s.e.Restarts(t)
	start := time.Now()
	s.c.StopProcess(t, proc)
	timer := time.NewTimer(30 * time.Second)
	<-timer.C // the outage itself
	s.c.StartStopped(t)
	back := time.Now()
	for _, name := range framework.ShippedComponents {
		s.e.WaitRolledOut(t, name, 4*time.Minute)
	}
	after := s.waitCheckpoint(t, back)
	if after < samples {
		t.Errorf("the checkpoint went from %d to %d samples across the outage", samples, after)
	}
	if n := s.checkpointCount(t); n != checkpoints {
		t.Errorf("%d checkpoints, %d before the outage", n, checkpoints)
	}
	now := s.e.Restarts(t)
	for pod, n := range now {
		if n-restarts[pod] > 1 {
			t.Errorf("%s restarted %d times over the outage: a crash loop", pod, n-restarts[pod])
		}
	}
	for _, name := range framework.ShippedComponents {
		for _, p := range s.e.Pods(t, system, "app="+name) {
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
					t.Errorf("%s is in CrashLoopBackOff", p.Name)
				}
			}
		}
	}
	w := s.probe.window(start, back)
	t.Logf("%s down 30 s: restarts %v → %v; checkpoint samples %d → %d; probe pods during the outage: %v",
		proc, restarts, now, samples, after, w)
	s.waitPatched(t)
	w = s.probe.window(back, time.Now())
	if w.unpatched > 0 {
		t.Logf("after %s came back: %v (the replicas' caches resynchronise)", proc, w)
	}
}

// drain drains the real node: the disruption budgets keep one replica of each component, so
// pods stay patched; after uncordon all come back.
func (s *suite) drain(t *testing.T) {
	start := time.Now()
	out, err := s.c.KubectlE("drain", framework.RealNodeName, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s")
	defer s.c.Kubectl(t, "uncordon", framework.RealNodeName)
	if err == nil {
		t.Errorf("the drain evicted every replica of the components despite their disruption budgets:\n%s", out)
	} else if !strings.Contains(out+err.Error(), "disruption budget") {
		t.Errorf("the drain failed for another reason than the disruption budgets: %v\n%s", err, out)
	}
	for _, name := range framework.ShippedComponents {
		ready := 0
		for _, p := range s.e.Pods(t, system, "app="+name) {
			if framework.PodReady(&p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		if ready < 1 {
			t.Errorf("%s: no ready replica during the drain", name)
		}
	}
	w := s.probe.window(start, time.Now())
	t.Logf("during the drain: %v", w)
	if w.created == 0 || w.unpatched != 0 {
		t.Errorf("during the drain: %v; want pods, all patched", w)
	}
	s.c.Kubectl(t, "uncordon", framework.RealNodeName)
	for _, name := range framework.ShippedComponents {
		s.e.WaitRolledOut(t, name, 4*time.Minute)
	}
}

// uninstall runs the commands of docs/uninstall.md's kubectl section. The admission controller's
// last replica removes the registration before the commands do, and pod creation does not wait.
func (s *suite) uninstall(t *testing.T) {
	cmds := uninstallCommands(t, filepath.Join(s.c.RepoRoot, "docs", "uninstall.md"))
	s.c.Kubectl(t, cmds[0]...)
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		return len(s.e.Pods(t, system, "app=vpa-admission-controller")) == 0, nil
	})
	s.requireRegistrationGone(t)
	for _, c := range cmds[1:] {
		s.c.Kubectl(t, c...)
	}
	start := time.Now()
	s.waitProbes(t, start, 25)
	w := s.probe.window(start, time.Now())
	t.Logf("after the uninstall: %v", w)
	if w.slowest > 2*time.Second {
		t.Errorf("after the uninstall: %v; a creation waited on the webhook", w)
	}
}

// uninstallCommands reads the kubectl lines of the first sh block under "## kubectl".
func uninstallCommands(t *testing.T, doc string) [][]string {
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## kubectl\n")
	if !ok {
		t.Fatalf("%s has no kubectl section", doc)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("%s: no sh block in the kubectl section", doc)
	}
	block, _, _ = strings.Cut(block, "```")
	var cmds [][]string
	for _, line := range strings.Split(block, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "kubectl" {
			cmds = append(cmds, f[1:])
		}
	}
	if len(cmds) == 0 || !strings.Contains(strings.Join(cmds[0], " "), "delete deployment") {
		t.Fatalf("%s: the kubectl section must start by deleting the Deployments, got %v", doc, cmds)
	}
	return cmds
}
