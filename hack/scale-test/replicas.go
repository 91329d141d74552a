package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
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
	type proc struct {
		url    string
		exited <-chan error
		stop   func()
		res    *replicaResult
		prev   sample
	}
	var procs []*proc
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
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		logPath := filepath.Join(c.logDir, fmt.Sprintf("recommender-%s-replica-%d.log", stamp, i))
		logFile, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		defer logFile.Close()
		args := append(recommenderArgs(c, port), fmt.Sprintf("--shards=%d", c.shards))
		args = append(args, strings.Fields(c.extraArgs)...)
		logf("starting replica %d: %s %s (log %s)", i, c.recommender, strings.Join(args, " "), logPath)
		_, exited, stop, err := startProcess(c.recommender, args, logFile)
		if err != nil {
			return nil, err
		}
		procs = append(procs, &proc{url: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), exited: exited, stop: stop, res: &replicaResult{logPath: logPath}})
	}
	res := &shardedResults{}
	deadline := time.After(time.Duration(c.loops+2)*c.interval + 10*time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		done := true
		for _, p := range procs {
			if len(p.res.loops) < c.loops {
				done = false
			}
		}
		if done && res.allWritten > 0 {
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
	}
	for _, p := range procs {
		res.replicas = append(res.replicas, p.res)
	}
	return res, nil
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
}
