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
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openvpa/openvpa/hack/internal/benchenv"
)

// component is one updater or admission-controller binary to measure after
// the recommender, on the same workloads (--components).
type component struct {
	name, binary string
}

func parseComponents(s string) ([]component, error) {
	var out []component
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		name, bin, ok := strings.Cut(f, "=")
		if !ok || (name != "updater" && name != "admission-controller") {
			return nil, fmt.Errorf("--components: %q is not updater=BINARY or admission-controller=BINARY", f)
		}
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("--components: %w", err)
		}
		out = append(out, component{name: name, binary: bin})
	}
	return out, nil
}

// componentResult is what one run of a component measured.
type componentResult struct {
	component
	binaryMB             float64
	ready                time.Duration
	loops                int
	rss, anon, file      float64
	peakRSS, heap, heap0 float64
}

// measureComponent runs c scoped to the test namespace until it is ready and,
// for the updater, has run loops loops (--updater-interval=interval), then
// for settle more, and reads its memory from /metrics and /proc.
func measureComponent(ctx context.Context, cfg config, c component, loops int, interval, settle time.Duration) (*componentResult, error) {
	port, err := benchenv.FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig=" + cfg.kubeconfig, "--vpa-object-namespace=" + cfg.namespace, fmt.Sprintf("--address=127.0.0.1:%d", port)}
	switch c.name {
	case "updater":
		// Off-mode VPAs: every loop reads every VPA and pod and evicts none.
		args = append(args, "--updater-interval="+interval.String(), "--use-admission-controller-status=false")
	case "admission-controller":
		webhookPort, err := benchenv.FreePort()
		if err != nil {
			return nil, err
		}
		certs, err := os.MkdirTemp("", "scale-test-certs-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(certs)
		args = append(args, fmt.Sprintf("--port=%d", webhookPort), "--register-webhook=false", "--self-signed-cert-dir="+certs,
			"--status-lease-name=scale-test-admission-controller", "--status-lease-namespace="+cfg.namespace)
		loops = 0
	}
	st, err := os.Stat(c.binary)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(cfg.logDir, fmt.Sprintf("%s-%s.log", c.name, time.Now().Format("20060102-150405")))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	logf("starting %s %s (log %s)", c.binary, strings.Join(args, " "), logPath)
	start := time.Now()
	proc, err := benchenv.StartProcess(c.binary, args, logFile)
	if err != nil {
		return nil, err
	}
	cmd, exited, stop := proc.Cmd, proc.Exited, proc.Stop
	defer stop()

	res := &componentResult{component: c, binaryMB: float64(st.Size()) / 1e6}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	loopsKey := `vpa_updater_execution_latency_seconds_count{step="total"}`
	var settled time.Time
	deadline := time.After(time.Duration(loops+2)*interval + 5*time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-exited:
			return nil, fmt.Errorf("%s exited: %v (see %s)", c.name, err, logPath)
		case <-deadline:
			return nil, fmt.Errorf("%s: not ready with %d loops in time (see %s)", c.name, loops, logPath)
		case <-tick.C:
		}
		cur, err := scrape(base + "/metrics")
		if err != nil {
			continue
		}
		res.peakRSS = math.Max(res.peakRSS, cur["process_resident_memory_bytes"])
		if res.ready == 0 {
			if ok, _ := get(base + "/readyz"); !ok {
				continue
			}
			res.ready = time.Since(start)
			res.heap0 = cur["go_memstats_heap_alloc_bytes"]
		}
		res.loops = int(cur[loopsKey])
		if res.loops < loops {
			continue
		}
		if settled.IsZero() {
			settled = time.Now()
		}
		if time.Since(settled) < settle {
			continue
		}
		res.rss, res.heap = cur["process_resident_memory_bytes"], cur["go_memstats_heap_alloc_bytes"]
		res.anon, res.file = rssSplit(cmd.Process.Pid)
		logf("%s %s: ready after %s, %d loops, RSS %.1f MB (anonymous %.1f, file-backed %.1f), peak %.1f MB, heap %.1f MB",
			c.name, c.binary, res.ready.Round(100*time.Millisecond), res.loops, res.rss/1e6, res.anon/1e6, res.file/1e6, res.peakRSS/1e6, res.heap/1e6)
		return res, nil
	}
}

func get(url string) (bool, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK, nil
}

// measureComponents measures each component rounds times, alternating them
// so that a change in the machine's load touches all alike.
func measureComponents(ctx context.Context, cfg config, comps []component, rounds int) ([]*componentResult, error) {
	if len(comps) == 0 {
		return nil, nil
	}
	if rounds < 1 {
		return nil, errors.New("--component-rounds must be positive")
	}
	var out []*componentResult
	for r := 0; r < rounds; r++ {
		for _, c := range comps {
			res, err := measureComponent(ctx, cfg, c, 3, 10*time.Second, 10*time.Second)
			if err != nil {
				return nil, err
			}
			out = append(out, res)
		}
	}
	return out, nil
}

func reportComponents(out io.Writer, res []*componentResult) {
	if len(res) == 0 {
		return
	}
	fmt.Fprintln(out, "\n| component | binary | binary MB | ready after s | updater loops | RSS MB (anonymous + file-backed) | peak RSS MB | heap at ready MB | heap at end MB |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range res {
		fmt.Fprintf(out, "| %s | %s | %.1f | %.1f | %d | %.1f (%.1f + %.1f) | %.1f | %.1f | %.1f |\n", r.name, r.binary, r.binaryMB,
			r.ready.Seconds(), r.loops, r.rss/1e6, r.anon/1e6, r.file/1e6, r.peakRSS/1e6, r.heap0/1e6, r.heap/1e6)
	}
}
