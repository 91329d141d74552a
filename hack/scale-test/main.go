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

// Command scale-test measures the recommender at scale on a running control
// plane (hack/cluster): it creates N Deployments with a VPA each (Off mode) in a
// namespace of its own, pods reporting simulated usage through KWOK
// annotations, runs the recommender binary scoped to that namespace, and
// reads the recommender's own /metrics after every loop: time per step, API
// writes, resident memory and heap. The first loop, where every VPA is new,
// is reported apart from the steady-state loops after it.
//
//	make scale-test                                              # 500 two-pod Deployments
//	make scale-test SCALE_TEST_FLAGS="--deployments=2000 --replicas=1"
//	go run ./hack/scale-test --kubeconfig=/tmp/other/kubeconfig --recommender=bin/vpa-recommender
//	go run ./hack/scale-test --deployments=10000 --replicas=1 --recommender-replicas=2   # sharded, per-replica report
//
// The cluster needs room for the pods: every KWOK node holds 110
// (CLUSTER_NODES=10 hack/cluster/up.sh for 1,000 pods). The namespace is
// deleted at the end unless --keep is given.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/hack/internal/benchenv"
)

type config struct {
	kubeconfig string
	namespace  string
	// namespaces > 1 spreads the Deployments over <namespace>-0 ... -<n-1>,
	// and the recommender watches every namespace.
	namespaces   int
	deployments  int
	replicas     int
	loops        int
	interval     time.Duration
	recommender  string
	qps          float64
	extraArgs    string
	setupTimeout time.Duration
	keep         bool
	reuse        bool
	logDir       string
	heapProfile  string
	components   string
	rounds       int
	// recommenderReplicas > 1 runs that many recommenders with --shards.
	recommenderReplicas int
	shards              int
	// killAfterLoops > 0 SIGKILLs replica 0 once every replica has run that
	// many loops, and measures the hand-over.
	killAfterLoops int
	// leaseDuration is the replicas' --leader-elect-lease-duration, for the
	// report.
	leaseDuration time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale-test:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := flag.NewFlagSet("scale-test", flag.ContinueOnError)
	fs.StringVar(&c.kubeconfig, "kubeconfig", benchenv.DefaultKubeconfig(), "kubeconfig of the cluster (default $KUBECONFIG, else _output/cluster/kubeconfig)")
	fs.StringVar(&c.namespace, "namespace", "scale-test", "namespace for the workloads; must not exist yet")
	fs.IntVar(&c.namespaces, "namespaces", 1, "spread the Deployments round-robin over this many namespaces, <namespace>-0, <namespace>-1, ...; above 1 the recommender watches every namespace (use a cluster of its own)")
	fs.IntVar(&c.deployments, "deployments", 500, "number of Deployments, each with a VPA in Off mode")
	fs.IntVar(&c.replicas, "replicas", 2, "pods per Deployment")
	fs.IntVar(&c.loops, "loops", 4, "recommender loops to measure, the first included")
	fs.DurationVar(&c.interval, "recommender-interval", time.Minute, "--recommender-interval passed to the recommender")
	fs.StringVar(&c.recommender, "recommender", filepath.Join("bin", "vpa-recommender"), "recommender binary")
	fs.Float64Var(&c.qps, "kube-api-qps", 50, "--kube-api-qps passed to the recommender (burst is twice this)")
	fs.StringVar(&c.extraArgs, "recommender-args", "", "extra recommender flags, space separated")
	fs.StringVar(&c.heapProfile, "heap-profile", "", "after the last loop, save the recommender's heap profile here (runs it with --profiling)")
	fs.DurationVar(&c.setupTimeout, "setup-timeout", 20*time.Minute, "deadline for the pods to run and report metrics")
	fs.BoolVar(&c.keep, "keep", false, "keep the namespace at the end")
	fs.BoolVar(&c.reuse, "reuse", false, "reuse the workloads of an existing namespace kept by --keep (its checkpoints are deleted first, so the recommender starts without history); implies --keep")
	fs.StringVar(&c.logDir, "log-dir", filepath.Join("_output", "scale-test"), "folder for the recommender's log")
	fs.StringVar(&c.components, "components", "", "after the recommender, measure these binaries one by one on the same workloads: comma-separated updater=BINARY or admission-controller=BINARY (each runs 3 updater loops of 10 s, or until ready, then 10 s more)")
	fs.IntVar(&c.rounds, "component-rounds", 1, "how many times to measure each of --components, alternating them")
	fs.IntVar(&c.recommenderReplicas, "recommender-replicas", 1, "recommender replicas; above 1 they divide the VPAs with --shards=--recommender-shards, each with its own QPS budget, and the report is per replica")
	fs.IntVar(&c.shards, "recommender-shards", 8, "--shards passed to the replicas when --recommender-replicas is above 1")
	fs.IntVar(&c.killAfterLoops, "kill-after-loops", 0, "with --recommender-replicas above 1: SIGKILL replica 0 once every replica has run this many loops and every VPA has its first status, and report when the others hold and serve its shards and the checkpoints before and after")
	fs.DurationVar(&c.leaseDuration, "lease-duration", 15*time.Second, "--leader-elect-lease-duration passed to the replicas")
	if err := fs.Parse(args); err != nil {
		return err
	}
	comps, err := parseComponents(c.components)
	if err != nil {
		return err
	}
	if c.killAfterLoops < 0 || c.killAfterLoops > 0 && (c.recommenderReplicas < 2 || c.killAfterLoops >= c.loops) {
		return errors.New("--kill-after-loops needs --recommender-replicas above 1 and fewer than --loops")
	}
	if c.recommenderReplicas < 1 || c.recommenderReplicas > 1 && (c.shards < c.recommenderReplicas || c.loops < 1) {
		return errors.New("--recommender-replicas must be positive; with more than one, --recommender-shards must be at least as many and --loops positive")
	}
	if c.namespaces < 1 || c.namespaces > c.deployments || c.namespaces > 1 && len(comps) > 0 {
		return errors.New("--namespaces must be between 1 and --deployments, and 1 with --components")
	}
	if c.deployments < 1 || c.replicas < 1 || c.loops < 0 || (c.loops == 0 && len(comps) == 0) {
		return errors.New("--deployments and --replicas must be positive, --loops too unless --components are measured")
	}
	setupStart := time.Now()
	if c.qps <= 0 {
		return errors.New("--kube-api-qps must be positive")
	}
	if _, err := os.Stat(c.recommender); err != nil {
		return fmt.Errorf("recommender binary: %w (build it with make bin/vpa-recommender)", err)
	}

	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", c.kubeconfig, err)
	}
	rc.QPS, rc.Burst = 200, 400
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	vpas, err := versioned.NewForConfig(rc)
	if err != nil {
		return err
	}
	metrics, err := metricsclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := preflight(ctx, kube, c); err != nil {
		return err
	}

	nss := c.namespaceList()
	if c.reuse {
		c.keep = true
		logf("reusing the workloads of %s; deleting their checkpoints and clearing their VPAs' statuses", describe(nss))
		for _, ns := range nss {
			if err := vpas.AutoscalingV1().VerticalPodAutoscalerCheckpoints(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				return fmt.Errorf("deleting the checkpoints of %s: %w", ns, err)
			}
			if err := clearStatuses(ctx, vpas, ns); err != nil {
				return err
			}
		}
	} else {
		logf("creating %s with %d Deployments of %d pods and a VPA each", describe(nss), c.deployments, c.replicas)
		for _, ns := range nss {
			if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("namespace %s exists: delete it, pass --reuse or pass another --namespace", ns)
				}
				return fmt.Errorf("creating namespace: %w", err)
			}
		}
		if !c.keep {
			defer func() {
				logf("deleting %s (in the background on the server)", describe(nss))
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				defer cancel()
				for _, ns := range nss {
					if err := kube.CoreV1().Namespaces().Delete(dctx, ns, metav1.DeleteOptions{}); err != nil {
						logf("deleting namespace: %v", err)
					}
				}
			}()
		}
		if err := createWorkloads(ctx, kube, vpas, c); err != nil {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, c.setupTimeout)
	defer cancel()
	want := c.deployments * c.replicas
	ours := map[string]bool{}
	for _, ns := range nss {
		ours[ns] = true
	}
	// One namespace is listed alone; several through a list of every
	// namespace, counting ours.
	listNS := c.namespace
	if c.namespaces > 1 {
		listNS = ""
	}
	if err := waitFor(sctx, "pods running", want, func(ctx context.Context) (int, error) {
		l, err := kube.CoreV1().Pods(listNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return 0, err
		}
		n := 0
		for i := range l.Items {
			if l.Items[i].Status.Phase == corev1.PodRunning && ours[l.Items[i].Namespace] {
				n++
			}
		}
		return n, nil
	}); err != nil {
		return err
	}
	if err := waitFor(sctx, "pods in metrics.k8s.io", want, func(ctx context.Context) (int, error) {
		l, err := metrics.MetricsV1beta1().PodMetricses(listNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for i := range l.Items {
			if ours[l.Items[i].Namespace] {
				n++
			}
		}
		return n, nil
	}); err != nil {
		return err
	}
	logf("workloads ready after %s", time.Since(setupStart).Round(time.Second))

	if c.loops > 0 && c.recommenderReplicas > 1 {
		res, err := measureReplicas(ctx, kube, vpas, c)
		if err != nil {
			return err
		}
		reportReplicas(out, c, res)
	} else if c.loops > 0 {
		res, err := measure(ctx, vpas, c)
		if err != nil {
			return err
		}
		report(out, c, res)
	}
	cres, err := measureComponents(ctx, c, comps, c.rounds)
	if err != nil {
		return err
	}
	reportComponents(out, cres)
	return nil
}

// describe names the namespaces for the log.
func describe(nss []string) string {
	if len(nss) == 1 {
		return "namespace " + nss[0]
	}
	return fmt.Sprintf("%d namespaces %s ... %s", len(nss), nss[0], nss[len(nss)-1])
}

// preflight checks that the CRDs are served and the nodes can hold the pods.
func preflight(ctx context.Context, kube kubernetes.Interface, c config) error {
	if _, err := kube.Discovery().ServerResourcesForGroupVersion("autoscaling.k8s.io/v1"); err != nil {
		return fmt.Errorf("the VPA CRDs are not served (kubectl apply -f deploy/crds): %w", err)
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	need, free := room(nodes.Items, pods.Items, c)
	if need > free {
		return fmt.Errorf("%d more pods do not fit: the nodes they can run on have room for %d (start the cluster with more CLUSTER_NODES, 110 pods each)",
			need, free)
	}
	return nil
}

// room returns how many pods the test still has to create and how many more fit on the nodes its
// pods can run on: those without a NoSchedule or NoExecute taint (the pods tolerate none, so the
// real node does not count). With --reuse, the namespace's pods are already there.
func room(nodes []corev1.Node, pods []corev1.Pod, c config) (need, free int64) {
	usable := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		tainted := false
		for _, t := range n.Spec.Taints {
			if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
				tainted = true
			}
		}
		if !tainted && !n.Spec.Unschedulable {
			usable[n.Name] = true
			free += n.Status.Allocatable.Pods().Value()
		}
	}
	need = int64(c.deployments * c.replicas)
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if c.reuse && slices.Contains(c.namespaceList(), p.Namespace) {
			need--
		}
		if usable[p.Spec.NodeName] {
			free--
		}
	}
	return max(need, 0), max(free, 0)
}

// usage spreads the simulated usage over a few values, so recommendations
// differ between Deployments.
func usage(i int) (cpu, mem string) {
	return fmt.Sprintf("%dm", 50+25*(i%10)), fmt.Sprintf("%dMi", 64+16*(i%8))
}

func createWorkloads(ctx context.Context, kube kubernetes.Interface, vpas versioned.Interface, c config) error {
	const workers = 8
	idx := make(chan int)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				if err := createOne(ctx, kube, vpas, c, i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range c.deployments {
		select {
		case idx <- i:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
		if (i+1)%250 == 0 {
			logf("created %d/%d Deployments and VPAs", i+1, c.deployments)
		}
	}
	close(idx)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

func createOne(ctx context.Context, kube kubernetes.Interface, vpas versioned.Interface, c config, i int) error {
	name := fmt.Sprintf("app-%05d", i)
	ns := c.namespaceOf(i)
	labels := map[string]string{"app": name}
	cpu, mem := usage(i)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(c.replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
					"kwok.x-k8s.io/usage-cpu":    cpu,
					"kwok.x-k8s.io/usage-memory": mem,
				}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("100Mi"),
					}},
				}}},
			},
		},
	}
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Deployment %s: %w", name, err)
	}
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: ptr.To(vpav1.UpdateModeOff)},
		},
	}
	if _, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Create(ctx, v, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating VPA %s: %w", name, err)
	}
	return nil
}

// clearStatuses removes the status of every VPA of the namespace, so that
// the time until every VPA has its first status is measured again.
func clearStatuses(ctx context.Context, vpas versioned.Interface, namespace string) error {
	l, err := vpas.AutoscalingV1().VerticalPodAutoscalers(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the VPAs of %s: %w", namespace, err)
	}
	const workers = 8
	idx := make(chan int)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range idx {
				v := &l.Items[i]
				if v.Status.Recommendation == nil && len(v.Status.Conditions) == 0 {
					continue
				}
				_, err := vpas.AutoscalingV1().VerticalPodAutoscalers(namespace).Patch(ctx, v.Name, types.MergePatchType,
					[]byte(`{"status":null}`), metav1.PatchOptions{}, "status")
				if err != nil && errs[w] == nil {
					errs[w] = fmt.Errorf("clearing the status of VPA %s: %w", v.Name, err)
				}
			}
		})
	}
	for i := range l.Items {
		idx <- i
	}
	close(idx)
	wg.Wait()
	return errors.Join(errs...)
}

// waitFor polls count until it reaches want, logging progress, until ctx ends.
func waitFor(ctx context.Context, what string, want int, count func(context.Context) (int, error)) error {
	last, lastLog := -1, time.Time{}
	for {
		n, err := count(ctx)
		if err == nil && n >= want {
			logf("%s: %d/%d", what, n, want)
			return nil
		}
		if err == nil && (n != last || time.Since(lastLog) > 30*time.Second) && time.Since(lastLog) > 10*time.Second {
			logf("%s: %d/%d", what, n, want)
			last, lastLog = n, time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %d/%d (last error: %v): %w", what, n, want, err, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// sample is one scrape of the recommender's /metrics.
type sample map[string]float64

// loopResult is what one loop cost: seconds per step, API writes by
// kind/result, and memory at its end.
type loopResult struct {
	steps  map[string]float64
	writes map[string]float64
	rss    float64
	heap   float64
}

type results struct {
	startup time.Duration // start of the process to the end of the first loop
	// allWritten is the start of the process to the moment a watch of the
	// VPAs saw the last of them get its first recommendation.
	allWritten time.Duration
	loops      []loopResult
	peakRSS    float64
	logPath    string
}

var steps = []string{"LoadVPAs", "LoadPods", "LoadMetrics", "DeleteRemovedPods", "UpdateVPAs", "MaintainCheckpoints", "GarbageCollect", "total"}

func measure(ctx context.Context, vpas versioned.Interface, c config) (*results, error) {
	port, err := benchenv.FreePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.logDir, fmt.Sprintf("recommender-%s.log", time.Now().Format("20060102-150405")))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := recommenderArgs(c, port)
	if c.heapProfile != "" {
		args = append(args, "--profiling")
	}
	args = append(args, strings.Fields(c.extraArgs)...)
	recommended, err := watchRecommended(ctx, vpas, c.namespaceList(), c.deployments)
	if err != nil {
		return nil, err
	}
	logf("starting %s %s (log %s)", c.recommender, strings.Join(args, " "), logPath)
	start := time.Now()
	proc, err := benchenv.StartProcess(c.recommender, args, logFile)
	if err != nil {
		return nil, err
	}
	cmd, exited, stop := proc.Cmd, proc.Exited, proc.Stop
	defer stop()

	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	res := &results{logPath: logPath}
	var prev sample
	deadline := time.After(time.Duration(c.loops+2)*c.interval + 10*time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for len(res.loops) < c.loops || res.allWritten == 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-exited:
			return nil, fmt.Errorf("recommender exited: %v (see %s)", err, logPath)
		case <-deadline:
			return nil, fmt.Errorf("only %d of %d loops finished in time (see %s)", len(res.loops), c.loops, logPath)
		case <-tick.C:
		}
		cur, err := scrape(url)
		if err != nil {
			continue // not listening yet
		}
		res.peakRSS = math.Max(res.peakRSS, cur["process_resident_memory_bytes"])
		if res.allWritten == 0 {
			res.allWritten = recommended.allRecommended()
		}
		if len(res.loops) >= c.loops {
			continue
		}
		if cur[stepKey("total", "_count")] <= prev[stepKey("total", "_count")] {
			continue
		}
		if res.startup == 0 {
			res.startup = time.Since(start)
		}
		lr := loopResult{steps: map[string]float64{}, writes: map[string]float64{},
			rss: cur["process_resident_memory_bytes"], heap: cur["go_memstats_heap_alloc_bytes"]}
		for _, s := range steps {
			lr.steps[s] = cur[stepKey(s, "_sum")] - prev[stepKey(s, "_sum")]
		}
		for k, v := range cur {
			if rest, ok := strings.CutPrefix(k, "vpa_recommender_api_writes_total{"); ok {
				lr.writes[strings.TrimSuffix(rest, "}")] = v - prev[k]
			}
		}
		res.loops = append(res.loops, lr)
		anon, file := rssSplit(cmd.Process.Pid)
		logf("loop %d: %.2fs, CPU %.2fs since start, RSS %.1f MB (anonymous %.1f, file-backed %.1f), heap %.1f MB (in use %.1f, next GC at %.1f, released %.1f; stacks %.1f; runtime total %.1f)",
			len(res.loops), lr.steps["total"], cur["process_cpu_seconds_total"], lr.rss/1e6, anon/1e6, file/1e6, lr.heap/1e6, cur["go_memstats_heap_inuse_bytes"]/1e6,
			cur["go_memstats_next_gc_bytes"]/1e6, cur["go_memstats_heap_released_bytes"]/1e6,
			cur["go_memstats_stack_inuse_bytes"]/1e6, cur["go_memstats_sys_bytes"]/1e6)
		prev = cur
	}
	if c.heapProfile != "" {
		if err := download(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", port), c.heapProfile); err != nil {
			return nil, fmt.Errorf("heap profile: %w", err)
		}
		logf("heap profile saved to %s (go tool pprof -sample_index=inuse_space %s)", c.heapProfile, c.heapProfile)
	}
	return res, nil
}

// recommenderArgs are the flags every measured recommender runs with.
func recommenderArgs(c config, port int) []string {
	args := []string{
		"--kubeconfig=" + c.kubeconfig,
		fmt.Sprintf("--address=127.0.0.1:%d", port),
		"--recommender-interval=" + c.interval.String(),
		"--kube-api-qps=" + strconv.FormatFloat(c.qps, 'f', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(int(2*c.qps)),
	}
	if c.namespaces <= 1 {
		args = append(args, "--vpa-object-namespace="+c.namespace)
	}
	return args
}

// download saves the body of a GET of url to path.
func download(url, path string) error {
	client := http.Client{Timeout: time.Minute}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func stepKey(step, suffix string) string {
	return "vpa_recommender_execution_latency_seconds" + suffix + `{step="` + step + `"}`
}

// scrape reads the text exposition into a map from "name{labels}" (labels as
// printed, without le buckets) to value.
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
	s := sample{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.Contains(line, "_bucket{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		s[line[:i]] = v
	}
	return s, sc.Err()
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func report(out io.Writer, c config, r *results) {
	fmt.Fprintf(out, "\n%d VPAs, %d Deployments of %d pods (%d pods) in %d namespaces, --recommender-interval=%s, --kube-api-qps=%g\n",
		c.deployments, c.deployments, c.replicas, c.deployments*c.replicas, c.namespaces, c.interval, c.qps)
	fmt.Fprintf(out, "process start to end of first loop: %s; to every VPA's first status written: %s; peak RSS seen: %.1f MB; recommender log: %s\n\n",
		r.startup.Round(100*time.Millisecond), r.allWritten.Round(time.Second), r.peakRSS/1e6, r.logPath)

	kinds := map[string]bool{}
	for _, l := range r.loops {
		for k := range l.writes {
			kinds[k] = true
		}
	}
	writeKeys := make([]string, 0, len(kinds))
	for k := range kinds {
		writeKeys = append(writeKeys, k)
	}
	sort.Strings(writeKeys)

	fmt.Fprint(out, "| loop | total s |")
	for _, s := range steps[:len(steps)-1] {
		fmt.Fprintf(out, " %s s |", s)
	}
	for _, k := range writeKeys {
		fmt.Fprintf(out, " writes %s |", strings.NewReplacer(`kind="`, "", `",result="`, "/", `"`, "").Replace(k))
	}
	fmt.Fprintln(out, " RSS MB | heap MB |")
	fmt.Fprint(out, "|---|---|")
	for range steps[:len(steps)-1] {
		fmt.Fprint(out, "---|")
	}
	for range writeKeys {
		fmt.Fprint(out, "---|")
	}
	fmt.Fprintln(out, "---|---|")
	for i, l := range r.loops {
		name := strconv.Itoa(i + 1)
		if i == 0 {
			name = "1 (all VPAs new)"
		}
		fmt.Fprintf(out, "| %s | %.2f |", name, l.steps["total"])
		for _, s := range steps[:len(steps)-1] {
			fmt.Fprintf(out, " %.3f |", l.steps[s])
		}
		for _, k := range writeKeys {
			fmt.Fprintf(out, " %.0f |", l.writes[k])
		}
		fmt.Fprintf(out, " %.1f | %.1f |\n", l.rss/1e6, l.heap/1e6)
	}
	if len(r.loops) > 1 {
		var sum, maxT, maxRSS float64
		for _, l := range r.loops[1:] {
			sum += l.steps["total"]
			maxT = math.Max(maxT, l.steps["total"])
			maxRSS = math.Max(maxRSS, l.rss)
		}
		fmt.Fprintf(out, "\nfirst loop %.2f s; steady state (loops 2-%d) mean %.2f s, max %.2f s, RSS max %.1f MB\n",
			r.loops[0].steps["total"], len(r.loops), sum/float64(len(r.loops)-1), maxT, maxRSS/1e6)
	}
}

// rssSplit reads the anonymous and file-backed parts of a process's resident
// set from /proc (zero where it cannot).
func rssSplit(pid int) (anon, file float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "RssAnon:":
			anon = v * 1024
		case "RssFile:":
			file = v * 1024
		}
	}
	return anon, file
}

// namespaceList returns the run's namespaces.
func (c config) namespaceList() []string { return benchenv.Namespaces(c.namespace, c.namespaces) }

// namespaceOf returns the namespace of Deployment i.
func (c config) namespaceOf(i int) string { return benchenv.NamespaceOf(c.namespace, c.namespaces, i) }
