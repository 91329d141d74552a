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
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/hack/internal/benchenv"
)

// replicaResult is what one replica of a sharded recommender cost.
type replicaResult struct {
	loops    []float64 // seconds per loop
	peakRSS  float64
	statuses float64 // successful status writes
	shards   float64
	// cachedPods and cachedVPAs are what the replica caches at its last loop.
	cachedPods, cachedVPAs float64
	logPath                string
}

type shardedResults struct {
	// allWritten is the start of the processes to the moment a watch of the
	// VPAs saw the last of them get its first recommendation.
	allWritten time.Duration
	replicas   []*replicaResult
	// kill is the hand-over after SIGKILL of replica 0 (--kill-after-loops).
	kill *killResult
}

// killResult is what SIGKILL of replica 0 cost the others.
type killResult struct {
	afterLoops int
	// held is the time from the kill until the others held every shard,
	// served until the last of them logged that it serves the shards it
	// took (their checkpoints restored).
	held, served time.Duration
	// checkpoints and samples in the test's namespaces just before the kill
	// and after the others served every shard and ran one more loop.
	checkpointsBefore, checkpointsAfter int
	samplesBefore, samplesAfter         int64
}

// replicaProc is one running replica.
type replicaProc struct {
	url    string
	cmd    *exec.Cmd
	exited <-chan error
	stop   func()
	res    *replicaResult
	prev   sample
	dead   bool
	// loopsAtKill is the replica's loop count when replica 0 was killed.
	loopsAtKill int
}

// measureReplicas runs --recommender-replicas recommenders with
// --shards=--recommender-shards on the workloads, each with its own QPS
// budget, until each has run --loops loops, and reads each one's /metrics
// every second. The shard Leases of earlier runs are deleted first.
func measureReplicas(ctx context.Context, kube kubernetes.Interface, vpas versioned.Interface, c config) (*shardedResults, error) {
	leases := kube.CoordinationV1().Leases("kube-system")
	if err := leases.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "shards.openvpa.io/group=vpa-recommender-lease"}); err != nil {
		return nil, fmt.Errorf("deleting the shard leases of earlier runs: %w", err)
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, err
	}
	var procs []*replicaProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	stamp := time.Now().Format("20060102-150405")
	recommended, err := watchRecommended(ctx, vpas, c.namespaceList(), c.deployments)
	if err != nil {
		return nil, err
	}
	for i := range c.recommenderReplicas {
		port, err := benchenv.FreePort()
		if err != nil {
			return nil, err
		}
		logPath := filepath.Join(c.logDir, fmt.Sprintf("recommender-%s-replica-%d.log", stamp, i))
		logFile, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		defer logFile.Close()
		args := append(recommenderArgs(c, port), fmt.Sprintf("--shards=%d", c.shards), "--leader-elect-lease-duration="+c.leaseDuration.String())
		args = append(args, strings.Fields(c.extraArgs)...)
		logf("starting replica %d: %s %s (log %s)", i, c.recommender, strings.Join(args, " "), logPath)
		proc, err := benchenv.StartProcess(c.recommender, args, logFile)
		if err != nil {
			return nil, err
		}
		cmd, exited, stop := proc.Cmd, proc.Exited, proc.Stop
		procs = append(procs, &replicaProc{url: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), cmd: cmd, exited: exited, stop: stop, res: &replicaResult{logPath: logPath}})
	}
	res := &shardedResults{}
	deadline := time.After(time.Duration(c.loops+2)*c.interval + 10*time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var killed time.Time
	for {
		done := res.allWritten > 0
		for _, p := range procs {
			if !p.dead && len(p.res.loops) < c.loops {
				done = false
			}
		}
		if res.kill != nil && res.kill.served == 0 {
			done = false
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("the replicas did not finish %d loops and every first status in time", c.loops)
		case <-tick.C:
		}
		for i, p := range procs {
			if p.dead {
				continue
			}
			select {
			case err := <-p.exited:
				return nil, fmt.Errorf("replica %d exited: %v (see %s)", i, err, p.res.logPath)
			default:
			}
			cur, err := scrape(p.url)
			if err != nil {
				continue
			}
			p.res.peakRSS = math.Max(p.res.peakRSS, cur["process_resident_memory_bytes"])
			p.res.statuses = cur[`vpa_recommender_api_writes_total{kind="status",result="success"}`]
			p.res.shards = cur["vpa_recommender_shards_owned"]
			p.res.cachedPods = cur[`vpa_recommender_cached_objects{resource="pods"}`]
			p.res.cachedVPAs = cur[`vpa_recommender_cached_objects{resource="verticalpodautoscalers"}`]
			if cur[stepKey("total", "_count")] > p.prev[stepKey("total", "_count")] {
				p.res.loops = append(p.res.loops, cur[stepKey("total", "_sum")]-p.prev[stepKey("total", "_sum")])
				logf("replica %d loop %d: %.2fs, RSS %.1f MB, %v shards, %.0f status writes", i, len(p.res.loops),
					p.res.loops[len(p.res.loops)-1], cur["process_resident_memory_bytes"]/1e6, p.res.shards, p.res.statuses)
				p.prev = cur
			}
		}
		if res.allWritten == 0 {
			res.allWritten = recommended.allRecommended()
		}
		// SIGKILL replica 0 once every replica has run --kill-after-loops
		// loops and every VPA has its first status.
		if c.killAfterLoops > 0 && res.kill == nil && res.allWritten > 0 {
			ready := true
			for _, p := range procs {
				ready = ready && len(p.res.loops) >= c.killAfterLoops
			}
			if ready {
				res.kill = &killResult{afterLoops: c.killAfterLoops}
				if res.kill.checkpointsBefore, res.kill.samplesBefore, err = countCheckpoints(ctx, vpas, c.namespaceList()); err != nil {
					return nil, err
				}
				if err := procs[0].cmd.Process.Kill(); err != nil {
					return nil, fmt.Errorf("killing replica 0: %w", err)
				}
				killed = time.Now()
				procs[0].dead = true
				for _, p := range procs[1:] {
					p.loopsAtKill = len(p.res.loops)
				}
				logf("SIGKILL replica 0 (%v shards) with %d checkpoints of %d samples", procs[0].res.shards,
					res.kill.checkpointsBefore, res.kill.samplesBefore)
			}
		}
		if res.kill != nil && res.kill.served == 0 {
			k := res.kill
			held := 0.0
			for _, p := range procs[1:] {
				held += p.res.shards
			}
			if k.held == 0 && int(held) == c.shards {
				k.held = time.Since(killed)
				logf("the others hold every shard %s after the kill", k.held.Round(100*time.Millisecond))
			}
			if k.held > 0 {
				last, ok, err := lastServing(procs[1:], killed, c.shards)
				if err != nil {
					return nil, err
				}
				if ok {
					// Served: wait one more loop of every survivor, then count.
					more := true
					for _, p := range procs[1:] {
						more = more && len(p.res.loops) > p.loopsAtKill+1
					}
					if more {
						k.served = last.Sub(killed)
						if k.checkpointsAfter, k.samplesAfter, err = countCheckpoints(ctx, vpas, c.namespaceList()); err != nil {
							return nil, err
						}
						logf("the others serve every shard %s after the kill; %d checkpoints of %d samples", k.served.Round(100*time.Millisecond),
							k.checkpointsAfter, k.samplesAfter)
					}
				}
			}
		}
	}
	for _, p := range procs {
		res.replicas = append(res.replicas, p.res)
	}
	return res, nil
}

// servingRe matches the loop's log line when it serves shards it took, with
// klog's time of day.
var servingRe = regexp.MustCompile(`(?m)^I\d{4} (\d\d:\d\d:\d\d\.\d{6}) .*"Serving new shards".* serving=(\d+)`)

// lastServing returns the latest time after since that a replica logged
// that it serves new shards; ok once the replicas' latest such lines add up
// to every shard (after a kill they only take shards).
func lastServing(procs []*replicaProc, since time.Time, shards int) (last time.Time, ok bool, err error) {
	y, mo, d := since.Date()
	total := 0
	for _, p := range procs {
		b, err := os.ReadFile(p.res.logPath)
		if err != nil {
			return time.Time{}, false, err
		}
		lines := servingRe.FindAllStringSubmatch(string(b), -1)
		if len(lines) == 0 {
			continue
		}
		n, err := strconv.Atoi(lines[len(lines)-1][2])
		if err != nil {
			return time.Time{}, false, err
		}
		total += n
		for _, m := range lines {
			t, err := time.ParseInLocation("15:04:05.000000", m[1], time.Local)
			if err != nil {
				return time.Time{}, false, err
			}
			at := time.Date(y, mo, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
			if at.After(since) && at.After(last) {
				last = at
			}
		}
	}
	return last, total == shards && !last.IsZero(), nil
}

// countCheckpoints returns the checkpoints of the namespaces and their
// total samples.
func countCheckpoints(ctx context.Context, vpas versioned.Interface, namespaces []string) (n int, samples int64, err error) {
	for _, ns := range namespaces {
		l, err := vpas.AutoscalingV1().VerticalPodAutoscalerCheckpoints(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, 0, fmt.Errorf("listing the checkpoints of %s: %w", ns, err)
		}
		n += len(l.Items)
		for i := range l.Items {
			samples += int64(l.Items[i].Status.TotalSamplesCount)
		}
	}
	return n, samples, nil
}

func reportReplicas(out io.Writer, c config, r *shardedResults) {
	fmt.Fprintf(out, "\n%d VPAs, %d Deployments of %d pods in %d namespaces, %d recommender replicas, --shards=%d, --recommender-interval=%s, --kube-api-qps=%g each\n",
		c.deployments, c.deployments, c.replicas, c.namespaces, c.recommenderReplicas, c.shards, c.interval, c.qps)
	fmt.Fprintf(out, "start to every VPA's first status (seen by a watch): %s\n\n", r.allWritten.Round(time.Second))
	fmt.Fprintln(out, "| replica | shards | status writes | cached pods | cached VPAs | first loop s | steady loops mean s | max s | peak RSS MB |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|")
	for i, rr := range r.replicas {
		var sum, maxT float64
		for _, l := range rr.loops[1:] {
			sum += l
			maxT = math.Max(maxT, l)
		}
		mean := 0.0
		if n := len(rr.loops) - 1; n > 0 {
			mean = sum / float64(n)
		}
		fmt.Fprintf(out, "| %d | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.1f |\n", i, rr.shards, rr.statuses, rr.cachedPods, rr.cachedVPAs,
			rr.loops[0], mean, maxT, rr.peakRSS/1e6)
	}
	if k := r.kill; k != nil {
		fmt.Fprintf(out, "\nSIGKILL of replica 0 after %d loops: the others held every shard %s later and served them %s later (lease duration + one interval: %s); "+
			"checkpoints %d (%d samples) before, %d (%d samples) one loop after\n",
			k.afterLoops, k.held.Round(100*time.Millisecond), k.served.Round(100*time.Millisecond), c.leaseDuration+c.interval,
			k.checkpointsBefore, k.samplesBefore, k.checkpointsAfter, k.samplesAfter)
	}
}
