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

package framework

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// PrometheusOptions configure a test's Prometheus.
type PrometheusOptions struct {
	// OpenMetrics is a file of series to backfill the TSDB with before the
	// first start (promtool tsdb create-blocks-from openmetrics).
	OpenMetrics string
	// Port is the loopback port to listen on; 0 picks a free one.
	Port int
	// MaxSamples is --query.max-samples; 0 keeps Prometheus's default.
	MaxSamples int
	// Config is the content of prometheus.yml (scrape targets, rule files);
	// empty means a one-minute scrape interval and nothing to scrape.
	Config string
}

// Prometheus is a real Prometheus server (Debian's package, which
// hack/cluster/up.sh installs) for one test, with a TSDB of its own.
type Prometheus struct {
	// URL is the server's base URL.
	URL  string
	Port int

	c    *Cluster
	dir  string
	opts PrometheusOptions
	proc *Process
}

// NewPrometheus prepares a Prometheus: it backfills the TSDB from
// o.OpenMetrics, but does not start the server (Start does).
func (c *Cluster) NewPrometheus(t testing.TB, o PrometheusOptions) *Prometheus {
	t.Helper()
	if o.Port == 0 {
		o.Port = FreePort(t)
	}
	dir := t.TempDir()
	p := &Prometheus{URL: fmt.Sprintf("http://127.0.0.1:%d", o.Port), Port: o.Port, c: c, dir: dir, opts: o}
	config := o.Config
	if config == "" {
		config = "global:\n  scrape_interval: 1m\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if o.OpenMetrics != "" {
		start := time.Now()
		// Day-long blocks: 2-hour ones (the default) take ten times longer to write.
		out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
			o.OpenMetrics, filepath.Join(dir, "data")).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
		}
		t.Logf("backfilled Prometheus from %s in %v", o.OpenMetrics, time.Since(start).Round(time.Millisecond))
	}
	return p
}

// Start starts the server and waits until it is ready.
func (p *Prometheus) Start(t testing.TB) {
	t.Helper()
	args := []string{
		"--config.file=" + filepath.Join(p.dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(p.dir, "data"),
		"--storage.tsdb.retention.time=90d",
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(p.Port),
	}
	if p.opts.MaxSamples > 0 {
		args = append(args, "--query.max-samples="+strconv.Itoa(p.opts.MaxSamples))
	}
	p.proc = p.c.RunComponent(t, Component{Name: "prometheus", Binary: "prometheus", Args: args, KubeconfigFlag: "-"})
	WaitFor(t, time.Minute, func() (bool, error) {
		if exited, err := p.proc.Exited(); exited {
			t.Fatalf("prometheus exited: %v\n%s", err, p.proc.Log())
		}
		resp, err := http.Get(p.URL + "/-/ready")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// Stop stops the server; Start starts it again on the same port and data.
func (p *Prometheus) Stop(t testing.TB) {
	t.Helper()
	if p.proc != nil {
		p.proc.Stop(t)
		p.proc = nil
	}
}
