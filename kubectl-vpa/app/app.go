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

// Package app is the kubectl-vpa command line: kubectl's connection flags
// (--kubeconfig, --context, -n, --as, ...), -A and -l, the explain, report
// and export subcommands and their output formats, the replay subcommand (kubectl-vpa/replay), which
// reads a trace file instead of a cluster, and the version subcommand.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/kubectl-vpa/explain"
	"github.com/openvpa/openvpa/kubectl-vpa/export"
	"github.com/openvpa/openvpa/kubectl-vpa/replay"
	"github.com/openvpa/openvpa/kubectl-vpa/report"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
	"github.com/openvpa/openvpa/recommender/app/options/tunables"
)

const usage = `kubectl vpa explains and audits VerticalPodAutoscalers, exports their
recommendations as patches, and replays usage traces.

Usage:
  kubectl vpa explain (NAME | -l SELECTOR) [-n NAMESPACE | -A] [-o table|json|yaml] [flags]
  kubectl vpa report [-n NAMESPACE | -A] [-l SELECTOR] [-o table|json|yaml|csv|html] [--out FILE] [flags]
  kubectl vpa export [NAME | KIND/NAME ...] [-n NAMESPACE | -A] [-l SELECTOR] [--prometheus-url URL [--all-workloads]]
                     [--format strategic|json6902] [--dir DIR] [flags]
  kubectl vpa replay --trace FILE [--estimator NAME] [--out DIR] [flags]
  kubectl vpa version [-o json|yaml]

explain: why the recommendation of VPA NAME is what it is (history, percentiles, margin,
confidence, clipping limits, OOM kills), how each pod's requests compare with it, and what
the updater would do with each pod and why. It computes the steps of the recommender's
estimator with the recommender's flags: pass the same --estimator and estimator and model
flags as the recommender runs with.

report: every VPA in scope with requested and recommended cpu and memory, the savings or
shortfall, and flags for low confidence, clipping, recommendations not applied, overlapping
VPAs and HPA conflicts.

export: each VPA's recommendation as a patch of its workload's pod template, with the
requests and limits the admission controller would set, for a Git repository: a YAML
stream, or with --dir files and a kustomize Component. With --prometheus-url, workloads
without a VPA (KIND/NAME, or --all-workloads) get the recommendation the recommender
gives after their usage history in Prometheus.

replay: what a VPA would have done with a saved usage trace: replays it through the
recommender's model, an estimator and the updater's rule, and scores the requests it would
have set (docs/replay.md), and the recommendation after it. It reads the trace file, or a
workload's history in Prometheus, not the cluster.

version: the plugin's version, commit and build date.

explain, report and export take kubectl's connection flags (--kubeconfig, --context,
--cluster, --user, -n, --as, --as-group, --request-timeout, ...).
`

// Options are the command line.
type Options struct {
	// Kubeconfig and Overrides are kubectl's connection flags
	// (--kubeconfig, --context, --cluster, --user, -n, --as, --as-group,
	// --request-timeout, ...), under kubectl's names, read by client-go's
	// clientcmd as kubectl reads them.
	Kubeconfig    string
	Overrides     clientcmd.ConfigOverrides
	AllNamespaces bool
	// Selector selects VPAs by their labels (-l); TargetSelector selects
	// them by their target workload's labels.
	Selector       string
	TargetSelector string
	Output         string
	Out            string

	Explain explain.Options
	Export  export.Options
	Dir     string
	// History reads the usage history of workloads without a VPA for
	// export: --prometheus-url and the recommender's history flags.
	History replay.PrometheusSource
	// AllWorkloads is export's --all-workloads.
	AllWorkloads bool
	maxCPU       string
	maxMemory    string
	minReplicas  int

	selector, targetSelector labels.Selector
	requestTimeout           time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{Overrides: clientcmd.ConfigOverrides{Timeout: "30s"}, Output: "table", Explain: explain.DefaultOptions(), Export: export.DefaultOptions(),
		History: replay.NewPrometheusSource(), minReplicas: 2}
}

// AddFlags registers the flags of subcommand cmd.
func (o *Options) AddFlags(fs *pflag.FlagSet, cmd string) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// As kubectl: no basic-auth flags.
	names.AuthOverrideFlags.Username, names.AuthOverrideFlags.Password = clientcmd.FlagInfo{}, clientcmd.FlagInfo{}
	names.Timeout.Default = o.Overrides.Timeout
	names.Timeout.Description = "How long to wait for the API server: each request, and all of the command's reads from it. A duration (30s, 2m); 0 waits without limit."
	clientcmd.BindOverrideFlags(&o.Overrides, fs, names)
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Every namespace's VPAs (explain: with -l).")
	fs.StringVarP(&o.Selector, "selector", "l", o.Selector, "Label selector on the VPAs (e.g. -l team=shop,tier!=batch); supports '=', '==', '!=', 'in', 'notin' and 'key'/'!key'.")
	switch cmd {
	case "report":
		fs.StringVar(&o.TargetSelector, "target-selector", o.TargetSelector, "Label selector on the VPAs' target workloads (e.g. the Deployments' labels).")
		fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: table, json, yaml, csv or html.")
		fs.StringVar(&o.Out, "out", o.Out, "Write the output to this file instead of standard output (for -o html).")
	case "export":
		fs.StringVar(&o.TargetSelector, "target-selector", o.TargetSelector, "Label selector on the VPAs' target workloads (e.g. the Deployments' labels).")
		fs.StringVar(&o.Export.Format, "format", o.Export.Format, "Patch format: strategic (a strategic-merge patch of the workload) or json6902 (JSON patch operations, containers by index).")
		fs.StringVar(&o.Export.Value, "value", o.Export.Value, "The recommendation to write: target, lowerBound, upperBound or uncappedTarget.")
		fs.StringSliceVar(&o.Export.Containers, "containers", o.Export.Containers, "Only these containers (comma-separated names); default every container the VPA recommends.")
		fs.StringVar(&o.Dir, "dir", o.Dir, "Write one file per patch and a kustomization.yaml (kind Component) into this directory instead of a YAML stream to standard output.")
		fs.BoolVar(&o.AllWorkloads, "all-workloads", o.AllWorkloads, "With --prometheus-url: also export every Deployment, StatefulSet and DaemonSet of the namespace that no VPA targets (narrowed by --target-selector), from its usage history.")
		// The replay's history flags: --prometheus-url and the recommender's
		// (--history-length, --history-resolution, ...).
		o.History.AddServerFlags(fs)
	default:
		fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: table, json or yaml.")
	}
	e := &o.Explain
	if cmd == "explain" {
		fs.StringVar(&e.Estimator, "estimator", e.Estimator, `The recommender's --estimator: the estimator whose steps are explained, "percentile" (upstream's chain), "peak" or "adaptive".`)
		// The recommender's estimator and model flags, under its names and
		// defaults: the steps are computed with them.
		tunables.AddEstimatorFlags(fs, &e.Estimators)
		tunables.AddModelFlags(fs, e.Model)
	}
	if cmd == "export" {
		return
	}
	fs.StringVar(&o.maxCPU, "container-recommendation-max-allowed-cpu", "", "The recommender's flag of that name, if it is set: explains a target it capped.")
	fs.StringVar(&o.maxMemory, "container-recommendation-max-allowed-memory", "", "The recommender's flag of that name, if it is set.")
	fs.IntVar(&o.minReplicas, "min-replicas", o.minReplicas, "The updater's --min-replicas.")
	fs.Float64Var(&e.Restriction.EvictionTolerance, "eviction-tolerance", e.Restriction.EvictionTolerance, "The updater's --eviction-tolerance.")
	fs.Float64Var(&e.Priority.PodUpdateThreshold, "pod-update-threshold", e.Priority.PodUpdateThreshold, "The updater's --pod-update-threshold.")
	fs.DurationVar(&e.Priority.PodLifetimeUpdateThreshold, "in-recommendation-bounds-eviction-lifetime-threshold", e.Priority.PodLifetimeUpdateThreshold, "The updater's flag of that name.")
	fs.DurationVar(&e.Priority.EvictAfterOOMThreshold, "evict-after-oom-threshold", e.Priority.EvictAfterOOMThreshold, "The updater's --evict-after-oom-threshold.")
	fs.Float64Var(&e.EvictionRateLimit, "eviction-rate-limit", e.EvictionRateLimit, "The updater's --eviction-rate-limit.")
	fs.IntVar(&e.EvictionRateBurst, "eviction-rate-burst", e.EvictionRateBurst, "The updater's --eviction-rate-burst.")
	fs.BoolVar(&e.PerVPAConfig, "per-vpa-config", e.PerVPAConfig, "The PerVPAConfig feature gate of the recommender and updater is on.")
}

// Validate completes and checks the options.
func (o *Options) Validate(cmd string) error {
	formats := map[string]bool{"table": true, "json": true, "yaml": true}
	if cmd == "report" {
		formats["html"], formats["csv"] = true, true
	}
	if cmd != "export" && !formats[o.Output] {
		return fmt.Errorf("unsupported output format %q for %s", o.Output, cmd)
	}
	if o.Output == "html" && o.Out == "" {
		return errors.New("-o html needs --out FILE")
	}
	if o.AllNamespaces && o.Overrides.Context.Namespace != "" {
		return errors.New("-n and -A cannot be used together")
	}
	timeout := o.Overrides.Timeout
	if _, err := strconv.Atoi(timeout); err == nil {
		timeout += "s" // kubectl reads a bare number as seconds
	}
	d, err := time.ParseDuration(timeout)
	if err != nil || d < 0 {
		return fmt.Errorf("--request-timeout %q: want a duration such as 30s or 2m, 0 for none", o.Overrides.Timeout)
	}
	o.requestTimeout = d
	if o.selector, err = parseSelector("-l", o.Selector); err != nil {
		return err
	}
	if o.targetSelector, err = parseSelector("--target-selector", o.TargetSelector); err != nil {
		return err
	}
	if cmd == "export" {
		return o.validateExport()
	}
	if o.minReplicas < 1 {
		return errors.New("--min-replicas must be at least 1")
	}
	if cmd == "explain" {
		if err := tunables.Validate(o.Explain.Estimator, o.Explain.Estimators, *o.Explain.Model); err != nil {
			return err
		}
	}
	o.Explain.Restriction.MinReplicas = o.minReplicas
	max := corev1.ResourceList{}
	for name, s := range map[corev1.ResourceName]string{corev1.ResourceCPU: o.maxCPU, corev1.ResourceMemory: o.maxMemory} {
		if s == "" {
			continue
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return fmt.Errorf("--container-recommendation-max-allowed-%s: %w", name, err)
		}
		max[name] = q
	}
	if len(max) > 0 {
		o.Explain.Estimators.Config.MaxAllowed = max
	}
	return nil
}

func (o *Options) validateExport() error {
	if err := o.Export.Validate(); err != nil {
		return err
	}
	if !o.History.Enabled() {
		if o.AllWorkloads {
			return errors.New("--all-workloads exports workloads without a VPA from their usage history: give --prometheus-url")
		}
		return nil
	}
	if o.AllWorkloads && o.AllNamespaces {
		return errors.New("--all-workloads reads each workload's usage history from Prometheus: give one namespace (-n), not -A")
	}
	return o.History.ValidateServer()
}

// clientConfig loads the kubeconfig as kubectl does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, with the connection flags applied.
func (o *Options) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := o.Overrides
	if _, err := strconv.Atoi(overrides.Timeout); err == nil {
		overrides.Timeout += "s"
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides)
}

func parseSelector(flag, s string) (labels.Selector, error) {
	if s == "" {
		return labels.Everything(), nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, s, err)
	}
	return sel, nil
}

func flagSet(o *Options, cmd string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubectl vpa "+cmd, pflag.ContinueOnError)
	o.AddFlags(fs, cmd)
	return fs
}

var synopses = map[string]string{
	"explain": "kubectl vpa explain (NAME | -l SELECTOR) [-n NAMESPACE | -A] [-o table|json|yaml] [flags]",
	"report":  "kubectl vpa report [-n NAMESPACE | -A] [-l SELECTOR] [--target-selector SELECTOR] [-o table|json|yaml|csv|html] [--out FILE] [flags]",
	"export": "kubectl vpa export [NAME | KIND/NAME ...] [-n NAMESPACE | -A] [-l SELECTOR] [--prometheus-url URL [--all-workloads]] [--format strategic|json6902] " +
		"[--value target|lowerBound|upperBound|uncappedTarget] [--containers NAMES] [--dir DIR] [flags]",
}

// Main runs the command line args (without the program name).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	cmd := args[0]
	switch cmd {
	case "replay":
		return replay.Run(ctx, args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "--version":
		return runVersion(nil, stdout, stderr)
	}
	if _, ok := synopses[cmd]; !ok {
		return fmt.Errorf("unknown command %q; run kubectl vpa --help", cmd)
	}
	o := NewOptions()
	fs := flagSet(o, cmd)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  %s\n\nFlags:\n%s", synopses[cmd], fs.FlagUsages())
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := o.Validate(cmd); err != nil {
		return err
	}
	// Check the arguments before reading the kubeconfig.
	switch {
	case cmd == "explain" && fs.NArg() > 1:
		return errors.New("explain takes one VPA name, or none with -l")
	case cmd == "explain" && fs.NArg() == 1 && (o.Selector != "" || o.AllNamespaces):
		return errors.New("explain takes a VPA name or -l (and -A), not both")
	case cmd == "explain" && fs.NArg() == 0 && o.Selector == "":
		return errors.New("explain needs a VPA name, or -l SELECTOR for every VPA it selects")
	case cmd == "report" && fs.NArg() != 0:
		return fmt.Errorf("report takes no arguments, got %q", strings.Join(fs.Args(), " "))
	case cmd == "export" && fs.NArg() > 0 && o.AllNamespaces:
		return errors.New("export takes VPA names within one namespace: names and -A cannot be used together")
	case cmd == "export" && fs.NArg() > 0 && o.AllWorkloads:
		return errors.New("--all-workloads exports every workload of the namespace: give no names")
	}
	if cmd == "export" {
		for _, a := range fs.Args() {
			if strings.Contains(a, "/") {
				if _, _, err := parseExportWorkload(a); err != nil {
					return err
				}
			}
		}
	}
	cc := o.clientConfig()
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	if o.AllNamespaces {
		ns = ""
	}
	// --request-timeout bounds the reads from the API server; export's
	// Prometheus queries are bounded each by --prometheus-query-timeout.
	loadCtx := ctx
	if o.requestTimeout > 0 {
		var cancel context.CancelFunc
		loadCtx, cancel = context.WithTimeout(ctx, o.requestTimeout)
		defer cancel()
	}
	ix, err := load(loadCtx, cfg, ns)
	if err != nil {
		return err
	}
	switch cmd {
	case "explain":
		if fs.NArg() == 1 {
			return writeExplain(ix, o, ns, fs.Arg(0), stdout)
		}
		return writeExplainSelected(ix, o, stdout, stderr)
	case "export":
		return runExport(ctx, ix, o, ns, fs.Args(), stdout, stderr)
	default:
		return runReport(ix, o, ns, stdout, stderr)
	}
}

func load(ctx context.Context, cfg *rest.Config, ns string) (*snapshot.Index, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-vpa"
	clients, err := snapshot.NewClients(cfg)
	if err != nil {
		return nil, err
	}
	s, err := snapshot.Load(ctx, clients, ns, time.Now())
	if err != nil {
		return nil, err
	}
	return snapshot.NewIndex(ctx, s)
}

// selected returns the index's VPAs that -l and --target-selector select,
// sorted by namespace and name.
func (o *Options) selected(ix *snapshot.Index) []*vpav1.VerticalPodAutoscaler {
	return ix.Select(o.selector, o.targetSelector)
}

// writeExplain explains VPA ns/name from the index in o.Output's format.
func writeExplain(ix *snapshot.Index, o *Options, ns, name string, w io.Writer) error {
	v := ix.Find(ns, name)
	if v == nil {
		return fmt.Errorf("VerticalPodAutoscaler %s/%s not found", ns, name)
	}
	e := explain.Compute(ix, v, o.Explain)
	if o.Output == "table" {
		return explain.WriteTable(w, e)
	}
	return encode(w, o.Output, e)
}

// writeExplainSelected explains every VPA -l selects: tables one after
// the other, or one JSON or YAML list.
func writeExplainSelected(ix *snapshot.Index, o *Options, w, stderr io.Writer) error {
	vpas := o.selected(ix)
	if len(vpas) == 0 {
		fmt.Fprintf(stderr, "No VerticalPodAutoscalers match -l %s.\n", o.Selector)
		if o.Output == "table" {
			return nil
		}
	}
	all := make([]*explain.Explanation, 0, len(vpas))
	for i, v := range vpas {
		e := explain.Compute(ix, v, o.Explain)
		if o.Output != "table" {
			all = append(all, e)
			continue
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := explain.WriteTable(w, e); err != nil {
			return err
		}
	}
	if o.Output == "table" {
		return nil
	}
	return encode(w, o.Output, all)
}

func runReport(ix *snapshot.Index, o *Options, ns string, stdout, stderr io.Writer) error {
	if o.Out != "" {
		f, err := os.Create(o.Out)
		if err != nil {
			return err
		}
		if err := writeReport(ix, o, ns, f, stderr); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return writeReport(ix, o, ns, stdout, stderr)
}

// writeReport reports the index's VPAs that the selectors select (scope
// ns, "" for all) in o.Output's format. CSV holds only rows: its warnings go
// to stderr.
func writeReport(ix *snapshot.Index, o *Options, ns string, w, stderr io.Writer) error {
	r := report.ComputeFor(ix, o.selected(ix), o.Explain)
	r.Namespace = ns
	switch o.Output {
	case "table":
		return report.WriteTable(w, r)
	case "html":
		return report.WriteHTML(w, r)
	case "csv":
		for _, wn := range r.Warnings {
			fmt.Fprintln(stderr, "warning:", wn)
		}
		return report.WriteCSV(w, r)
	}
	return encode(w, o.Output, r)
}

func encode(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

// Exit prints err for main and returns the exit code.
func Exit(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "error:", err)
	return 1
}
