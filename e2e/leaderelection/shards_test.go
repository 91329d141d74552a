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

package leaderelection

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/shards"
)

const (
	shardCount = 8
	shardGroup = "vpa-recommender-lease"
	// minSamples in every checkpoint before the kill: more than a holder
	// that started over would write at first.
	minSamples = 3
)

// wroteRe matches the recommender's log line of one status write (-v=5),
// with klog's time of day.
var wroteRe = regexp.MustCompile(`(?m)^I\d{4} (\d\d:\d\d:\d\d\.\d{6}) .*"Wrote VPA status".* vpa="([^"]+)"`)

type write struct {
	at      string
	replica int
}

// TestShardsDivideVPAsAndHandOver runs three recommender replicas with
// --shards=8 over 40 VPAs, with the RBAC from deploy/: every VPA gets its
// recommendation, the replicas hold 2 or 3 shards each, and no VPA's status
// is written by two replicas in turn. After SIGKILL of one replica its
// shards are taken over within the lease duration plus one interval, and
// the new holders restore the VPAs' checkpoints instead of starting over.
// Every replica caches every pod.
func TestShardsDivideVPAsAndHandOver(t *testing.T) { testShards(t, false) }

// TestShardsByNamespaceCacheOnlyTheirNamespaces is the same with
// --shard-by=namespace: the 40 VPAs share their namespace's shard, one
// replica serves them and is the only one caching the namespace's pods and
// VPAs. After SIGKILL of that replica, the one taking the shard lists the
// namespace, restores the checkpoints and serves the VPAs.
func TestShardsByNamespaceCacheOnlyTheirNamespaces(t *testing.T) { testShards(t, true) }

func testShards(t *testing.T, byNamespace bool) {
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "recommender")
	ns := c.NewNamespace(t)
	ctx := context.Background()
	leases := c.Client.CoordinationV1().Leases("kube-system")
	cleanup := func() {
		_ = leases.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: shards.LabelGroup + "=" + shardGroup})
	}
	cleanup()
	t.Cleanup(cleanup)

	vpas := vpaclient.NewForConfigOrDie(c.Config)
	off := vpav1.UpdateModeOff
	for i := range 40 {
		name := fmt.Sprintf("w%02d", i)
		c.CreateDeployment(t, ns, framework.Workload{Name: name, Usage: framework.Usage{CPU: "200m", Memory: "150Mi"}})
		v := &vpav1.VerticalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: vpav1.VerticalPodAutoscalerSpec{
				TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
				UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &off},
			},
		}
		if _, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Create(ctx, v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitForPods(t, ns, "", 40, framework.PodRunning)

	binary := c.BuildBinary(t, "./recommender")
	shardBy := "vpa"
	if byNamespace {
		shardBy = "namespace"
	}
	// shardOf is the shard of a VPA of ns.
	shardOf := func(name string) int {
		if byNamespace {
			return shards.Of(ns, shardCount)
		}
		return shards.Of(ns+"/"+name, shardCount)
	}
	var procs []*framework.Process
	var reps []*replica
	for i := range 3 {
		port := framework.FreePort(t)
		p := c.RunComponent(t, framework.Component{
			Name:   fmt.Sprintf("vpa-recommender-%d", i),
			Binary: binary,
			Args: []string{"--vpa-object-namespace=" + ns, fmt.Sprintf("--address=127.0.0.1:%d", port), fmt.Sprintf("--shards=%d", shardCount),
				"--shard-by=" + shardBy,
				"--leader-elect-lease-duration=" + testLeaseDuration.String(), "--leader-elect-renew-deadline=3s",
				"--leader-elect-retry-period=1s", "--recommender-interval=" + testInterval.String(),
				"--checkpoints-write-interval=2s", "--checkpoints-timeout=5s", "--v=5"},
			ServiceAccount: "kube-system/vpa-recommender",
		})
		procs = append(procs, p)
		reps = append(reps, &replica{proc: p, health: fmt.Sprintf("http://127.0.0.1:%d", port)})
	}

	holders := func() (map[string][]int, error) {
		l, err := leases.List(ctx, metav1.ListOptions{LabelSelector: shards.LabelRole + "=" + shards.RoleShard})
		if err != nil {
			return nil, err
		}
		out := map[string][]int{}
		for _, lease := range l.Items {
			if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" && lease.Labels[shards.LabelGroup] == shardGroup {
				var i int
				fmt.Sscanf(strings.TrimPrefix(lease.Name, shardGroup+"-shard-"), "%d", &i)
				out[h] = append(out[h], i)
			}
		}
		return out, nil
	}
	// Every VPA served, the shards divided 3/3/2.
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		l, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, v := range l.Items {
			if v.Status.Recommendation == nil {
				return false, fmt.Errorf("%s has no recommendation yet", v.Name)
			}
		}
		h, err := holders()
		if err != nil {
			return false, err
		}
		if len(h) != 3 {
			return false, fmt.Errorf("shard holders %v, want 3", h)
		}
		total := 0
		for _, s := range h {
			if len(s) < 2 || len(s) > 3 {
				return false, fmt.Errorf("shard holders %v, want 2 or 3 shards each", h)
			}
			total += len(s)
		}
		if total != shardCount {
			return false, fmt.Errorf("%d shards held, want %d", total, shardCount)
		}
		return true, nil
	})

	// What each replica caches: by VPA, every pod and VPA of the namespace;
	// by namespace, only the holder of the namespace's shard.
	h, err := holders()
	if err != nil {
		t.Fatal(err)
	}
	nsShard := shards.Of(ns, shardCount)
	checkCaches := func(h map[string][]int, alive []int) {
		t.Helper()
		for _, i := range alive {
			want := 40
			if byNamespace && !containsInt(h[identityOf(t, procs[i])], nsShard) {
				want = 0
			}
			framework.WaitFor(t, time.Minute, func() (bool, error) {
				for _, res := range []string{"pods", "verticalpodautoscalers"} {
					n, err := cachedObjects(reps[i], res)
					if err != nil {
						return false, err
					}
					if n != want {
						return false, fmt.Errorf("replica %d (shards %v) caches %d %s of the namespace in shard %d, want %d",
							i, h[identityOf(t, procs[i])], n, res, nsShard, want)
					}
				}
				return true, nil
			})
		}
	}
	checkCaches(h, []int{0, 1, 2})

	// Let the checkpoints accumulate samples, then kill one replica. A
	// sample is one metrics-server scrape (--metric-resolution=10s, the
	// first usable one a scrape or two after the pod starts), so three take
	// 30-40 s, longer on a loaded machine: the deadline allows for that.
	cps := func() (map[string]int, error) {
		l, err := vpas.AutoscalingV1().VerticalPodAutoscalerCheckpoints(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]int{}
		for _, cp := range l.Items {
			out[cp.Spec.VPAObjectName] = cp.Status.TotalSamplesCount
		}
		return out, nil
	}
	var before map[string]int
	waited := time.Now()
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		var err error
		if before, err = cps(); err != nil {
			return false, err
		}
		for name, n := range before {
			if n < minSamples {
				return false, fmt.Errorf("checkpoint of %s has %d samples", name, n)
			}
		}
		if len(before) != 40 {
			return false, fmt.Errorf("%d checkpoints", len(before))
		}
		return true, nil
	})
	t.Logf("every checkpoint had %d samples %v later", minSamples, time.Since(waited).Round(time.Second))
	if h, err = holders(); err != nil {
		t.Fatal(err)
	}
	// By VPA replica 0; by namespace the replica serving the namespace.
	victim := 0
	if byNamespace {
		for i, p := range procs {
			if containsInt(h[identityOf(t, p)], nsShard) {
				victim = i
			}
		}
	}
	victimID := identityOf(t, procs[victim])
	victimShards := h[victimID]
	if len(victimShards) == 0 {
		t.Fatalf("replica %d (%s) holds no shard: %v", victim, victimID, h)
	}
	if err := procs[victim].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		h, err := holders()
		if err != nil {
			return false, err
		}
		if _, ok := h[victimID]; ok {
			return false, fmt.Errorf("the killed replica still holds %v", h[victimID])
		}
		total := 0
		for _, s := range h {
			total += len(s)
		}
		if total != shardCount {
			return false, fmt.Errorf("%d shards held", total)
		}
		return true, nil
	})
	took := time.Since(killed)
	t.Logf("shards %v of the killed replica taken over %v after SIGKILL", victimShards, took.Round(10*time.Millisecond))
	if limit := testLeaseDuration + testInterval + 2*time.Second; took > limit {
		t.Errorf("hand-over took %v, want within the lease duration + one interval (+2 s of polling), %v", took, limit)
	}

	// The new holders restored the checkpoints (their statuses need no
	// write: the restored history gives the same recommendation), so the
	// sample counts they write go on from where they were. A holder that
	// started over would write 1 or 2 samples first, below every count
	// before the kill; no count observed may fall below it.
	moved := map[string]bool{}
	for name := range before {
		if containsInt(victimShards, shardOf(name)) {
			moved[name] = true
		}
	}
	if byNamespace && len(moved) != 40 {
		t.Fatalf("%d VPAs moved with the namespace's shard, want all 40", len(moved))
	}
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		after, err := cps()
		if err != nil {
			return false, err
		}
		var waiting error
		for name := range moved {
			switch {
			case after[name] < before[name]:
				t.Fatalf("checkpoint of %s fell to %d samples from %d: its new holder did not restore it", name, after[name], before[name])
			case after[name] == before[name]:
				waiting = fmt.Errorf("checkpoint of %s: still %d samples", name, after[name])
			}
		}
		return waiting == nil, waiting
	})

	// The survivors cache what they serve: by namespace, the replica that
	// took the namespace's shard has listed it.
	if h, err = holders(); err != nil {
		t.Fatal(err)
	}
	var alive []int
	for i := range procs {
		if i != victim {
			alive = append(alive, i)
		}
	}
	checkCaches(h, alive)

	// No VPA was written by two replicas in turn.
	writes := map[string][]write{}
	for i, p := range procs {
		for _, m := range wroteRe.FindAllStringSubmatch(p.Log(), -1) {
			writes[m[2]] = append(writes[m[2]], write{at: m[1], replica: i})
		}
	}
	if len(writes) != 40 {
		t.Errorf("status writes seen for %d VPAs, want 40", len(writes))
	}
	for vpa, ws := range writes {
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].at < ws[j].at })
		seen := map[int]bool{}
		for k, w := range ws {
			if k > 0 && w.replica != ws[k-1].replica && seen[w.replica] {
				t.Errorf("%s written by replica %d again after replica %d: %v", vpa, w.replica, ws[k-1].replica, ws)
				break
			}
			seen[w.replica] = true
		}
	}
}

// identityOf reads the holder identity a replica writes on its Leases. The
// replica logs it, straight to its log file, before it takes any shard, so it
// is there once one of its Leases is seen. Whether the replica serves its
// shards yet is not: a Lease is taken before the replica's caches sync and
// its next loop starts serving (its "Serving new shards" line), so what it
// serves is checked by the caches and statuses, each with a deadline.
func identityOf(t *testing.T, p *framework.Process) string {
	t.Helper()
	m := identityRe.FindStringSubmatch(p.Log())
	if m == nil {
		t.Fatalf("%s did not log its shard identity", p.Name)
	}
	return m[1]
}

var identityRe = regexp.MustCompile(`"Shard identity".* identity="([^"]+)"`)

// cachedObjectsRe reads vpa_recommender_cached_objects from /metrics.
var cachedObjectsRe = regexp.MustCompile(`(?m)^vpa_recommender_cached_objects\{resource="([^"]+)"\} (\d+)$`)

// cachedObjects returns how many objects of a resource a replica caches.
func cachedObjects(r *replica, resource string) (int, error) {
	body, err := r.get("/metrics")
	if err != nil {
		return 0, err
	}
	for _, m := range cachedObjectsRe.FindAllStringSubmatch(body, -1) {
		if m[1] == resource {
			return strconv.Atoi(m[2])
		}
	}
	return 0, fmt.Errorf("no vpa_recommender_cached_objects for %s on %s", resource, r.proc.Name)
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
