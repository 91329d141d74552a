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

// Command policy-scale measures the recommender's policy controller at
// scale on a running control plane (hack/cluster): N Deployments with no
// pods under one VerticalPodAutoscalerPolicy.
//
// It creates the Deployments (replicas 0) with a fast client and waits until
// the controller manager has made their ReplicaSets, starts the recommender
// with --policy-controller and its --kube-api-qps, samples its resident
// memory with the caches warm, then creates one policy over the namespaces
// and reports:
//
//   - creation: the time from the policy's creation until a watch sees N
//     managed VPAs, against N / QPS, and the writes the controller counted;
//
//   - steady state: over --intervals windows of --interval, the controller's
//     writes and the managed VPAs' resource versions, which should not move;
//
//   - memory: resident memory before the policy and in the steady state,
//     and per workload;
//
//   - the policy's status counts;
//
//   - deletion (--delete-policy): the time until the policy's VPAs are gone.
//
//     go run ./hack/policy-scale --kubeconfig=/tmp/scale-cluster/kubeconfig --workloads=10000 --kube-api-qps=50 --kube-api-burst=100 --keep
//     go run ./hack/policy-scale --kubeconfig=/tmp/scale-cluster/kubeconfig --workloads=10000 --kube-api-qps=100 --kube-api-burst=200 --reuse
//
// Run it on a control plane of its own: the policy selects its namespaces
// only, but the recommender watches every namespace.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/hack/internal/benchenv"
)

type config struct {
	kubeconfig string
	namespace  string
	namespaces int
	workloads  int
	policy     string

	recommender string
	extraArgs   string
	qps         float64
	burst       int
	setupQPS    float64

	interval  time.Duration
	intervals int
	baseline  time.Duration
	tolerance float64

	deletePolicy bool
	setupTimeout time.Duration
	keep         bool
	reuse        bool
	logDir       string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "policy-scale:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("policy-scale", flag.ContinueOnError)
	fs.StringVar(&c.kubeconfig, "kubeconfig", benchenv.DefaultKubeconfig(), "kubeconfig of the cluster (default $KUBECONFIG, else _output/cluster/kubeconfig)")
	fs.StringVar(&c.namespace, "namespace", "policy-scale", "namespace of the Deployments; with --namespaces above 1, the prefix of <namespace>-0 ... <namespace>-<n-1>")
	fs.IntVar(&c.namespaces, "namespaces", 1, "spread the Deployments round-robin over this many namespaces")
	fs.IntVar(&c.workloads, "workloads", 10000, "number of Deployments (replicas 0, so no pods)")
	fs.StringVar(&c.policy, "policy", "policy-scale", "name of the VerticalPodAutoscalerPolicy; it selects the namespaces by the label "+selectLabel+"=<name>")
	fs.StringVar(&c.recommender, "recommender", "", "recommender binary; empty builds ./recommender with go build -o into --log-dir")
	fs.StringVar(&c.extraArgs, "recommender-args", "", "extra recommender flags, space separated")
	fs.Float64Var(&c.qps, "kube-api-qps", 50, "--kube-api-qps of the recommender: the policy controller's write rate")
	fs.IntVar(&c.burst, "kube-api-burst", 100, "--kube-api-burst of the recommender")
	fs.Float64Var(&c.setupQPS, "setup-qps", 300, "QPS of the harness's own client, which creates the Deployments")
	fs.DurationVar(&c.interval, "interval", 30*time.Second, "one interval of the steady state (the controller's own cadence: its 30 s kind ticker)")
	fs.IntVar(&c.intervals, "intervals", 10, "intervals of the steady state in which the controller must make no write")
	fs.DurationVar(&c.baseline, "baseline", 30*time.Second, "how long resident memory is sampled with the caches warm, before the policy exists")
	fs.Float64Var(&c.tolerance, "tolerance", 0.10, "the creation time passes when within this fraction of N / --kube-api-qps")
	fs.BoolVar(&c.deletePolicy, "delete-policy", true, "at the end, delete the policy and measure the time until its VPAs are gone")
	fs.DurationVar(&c.setupTimeout, "setup-timeout", 30*time.Minute, "deadline for the Deployments and their ReplicaSets")
	fs.BoolVar(&c.keep, "keep", false, "keep the namespaces and Deployments at the end (the policy and its VPAs are deleted)")
	fs.BoolVar(&c.reuse, "reuse", false, "reuse the Deployments kept by --keep: deletes the policy and any VPA it left first; implies --keep")
	fs.StringVar(&c.logDir, "log-dir", filepath.Join("_output", "policy-scale"), "folder for the recommender's binary and log")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.workloads < 1:
		return c, errors.New("--workloads must be positive")
	case c.namespaces < 1 || c.namespaces > c.workloads:
		return c, errors.New("--namespaces must be between 1 and --workloads")
	case c.qps <= 0 || c.burst < 1 || c.setupQPS <= 0:
		return c, errors.New("--kube-api-qps, --kube-api-burst and --setup-qps must be positive")
	case c.interval <= 0 || c.intervals < 1 || c.baseline <= 0:
		return c, errors.New("--interval, --intervals and --baseline must be positive")
	}
	if c.reuse {
		c.keep = true
	}
	return c, nil
}

// run measures one recommender on one set of Deployments.
func run(ctx context.Context, args []string, out io.Writer) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", c.kubeconfig, err)
	}
	rc.QPS, rc.Burst = float32(c.setupQPS), int(2*c.setupQPS)
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	vpas, err := versioned.NewForConfig(rc)
	if err != nil {
		return err
	}
	cl := &cluster{kube: kube, vpas: vpas, c: c}
	if err := cl.preflight(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return err
	}
	bin := c.recommender
	if bin == "" {
		if bin, err = build(ctx, c.logDir); err != nil {
			return err
		}
	}

	setupStart := time.Now()
	if c.reuse {
		if err := cl.clean(ctx); err != nil {
			return err
		}
	} else {
		if err := cl.createNamespaces(ctx); err != nil {
			return err
		}
		if !c.keep {
			defer cl.deleteNamespaces(context.WithoutCancel(ctx))
		}
		if err := cl.createDeployments(ctx); err != nil {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, c.setupTimeout)
	err = cl.waitWorkloads(sctx)
	cancel()
	if err != nil {
		return err
	}
	logf("workloads ready after %s", time.Since(setupStart).Round(time.Second))

	res, err := measure(ctx, cl, bin)
	if res != nil {
		report(out, c, res)
	}
	return err
}

// build compiles ./recommender into dir.
func build(ctx context.Context, dir string) (string, error) {
	bin, err := filepath.Abs(filepath.Join(dir, "recommender"))
	if err != nil {
		return "", err
	}
	logf("building %s", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./recommender")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build -o %s ./recommender (run from the repository's root): %w", bin, err)
	}
	return bin, nil
}

// recommender is the running process under test.
type recommender struct {
	proc    *benchenv.Process
	url     string
	logPath string
}

// recommenderArgs are the flags the recommender runs with.
func recommenderArgs(c config, port int) []string {
	args := []string{
		"--kubeconfig=" + c.kubeconfig,
		"--policy-controller",
		"--recommender-name=policy-scale",
		"--kube-api-qps=" + strconv.FormatFloat(c.qps, 'f', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(c.burst),
		fmt.Sprintf("--address=127.0.0.1:%d", port),
		"--leader-elect=false",
		"--v=1",
	}
	return append(args, strings.Fields(c.extraArgs)...)
}

func startRecommender(c config, bin string) (*recommender, error) {
	port, err := benchenv.FreePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.logDir, fmt.Sprintf("recommender-%s.log", time.Now().Format("20060102-150405")))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := recommenderArgs(c, port)
	logf("starting %s %s (log %s)", bin, strings.Join(args, " "), logPath)
	proc, err := benchenv.StartProcess(bin, args, logFile)
	if err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		<-proc.Done
		logFile.Close()
	}()
	r := &recommender{proc: proc, url: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), logPath: logPath}
	return r, nil
}

// stop stops the process unless it has exited.
func (r *recommender) stop() { r.proc.Stop() }

// alive returns an error once the process has exited.
func (r *recommender) alive() error {
	select {
	case <-r.proc.Done:
		return fmt.Errorf("the recommender exited (see %s)", r.logPath)
	default:
		return nil
	}
}

// logCount counts the lines of the recommender's log that contain s.
func (r *recommender) logCount(s string) int {
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}

// scrape reads the recommender's /metrics.
func scrape(url string) (sample, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseExposition(resp.Body)
}

// point is one sample of the process's memory.
type point struct {
	at        time.Time
	vmRSS     float64 // /proc/<pid>/status
	metricRSS float64 // process_resident_memory_bytes
	heapInuse float64 // go_memstats_heap_inuse_bytes
}

// sampler reads the process's memory every second.
type sampler struct {
	pid int
	url string

	mu     sync.Mutex
	points []point
}

func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
		if err != nil {
			continue
		}
		rss, err := parseVmRSS(string(b))
		if err != nil {
			continue
		}
		p := point{at: time.Now(), vmRSS: rss}
		if m, err := scrape(s.url); err == nil {
			p.metricRSS, p.heapInuse = m["process_resident_memory_bytes"], m["go_memstats_heap_inuse_bytes"]
		}
		s.mu.Lock()
		s.points = append(s.points, p)
		s.mu.Unlock()
	}
}

// between summarises the samples taken in [from, to].
func (s *sampler) between(from, to time.Time) (vmRSS, metricRSS, heap stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a, b, h []float64
	for _, p := range s.points {
		if p.at.Before(from) || p.at.After(to) {
			continue
		}
		a = append(a, p.vmRSS)
		if p.metricRSS > 0 {
			b = append(b, p.metricRSS)
			h = append(h, p.heapInuse)
		}
	}
	return summarize(a), summarize(b), summarize(h)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// waitUntil polls cond every period until it returns true or an error, or
// ctx ends.
func waitUntil(ctx context.Context, period time.Duration, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(period):
		}
	}
}
