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
// (--kubeconfig, --context, -n, -A), the explain and report subcommands and
// their output formats, the replay subcommand (kubectl-vpa/replay), which
// reads a trace file instead of a cluster, and the version subcommand.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/kubectl-vpa/explain"
	"github.com/openvpa/openvpa/kubectl-vpa/replay"
	"github.com/openvpa/openvpa/kubectl-vpa/report"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
	"github.com/openvpa/openvpa/recommender/app/options/tunables"
)

const usage = `kubectl vpa explains and audits VerticalPodAutoscalers and replays usage traces.

Usage:
  kubectl vpa explain NAME [-n NAMESPACE] [-o table|json|yaml] [flags]
  kubectl vpa report [-n NAMESPACE | -A] [-o table|json|yaml|html] [--out FILE] [flags]
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

replay: what a VPA would have done with a saved usage trace: replays it through the
recommender's model, an estimator and the updater's rule, and scores the requests it would
have set (docs/replay.md). It reads the trace file, not the cluster.

version: the plugin's version, commit and build date.
`

// Options are the command line.
type Options struct {
	Kubeconfig     string
	Context        string
	Namespace      string
	AllNamespaces  bool
	Output         string
	Out            string
	RequestTimeout time.Duration

	Explain     explain.Options
	maxCPU      string
	maxMemory   string
	minReplicas int
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{Output: "table", RequestTimeout: 30 * time.Second, Explain: explain.DefaultOptions(), minReplicas: 2}
}

// AddFlags registers the flags of subcommand cmd.
func (o *Options) AddFlags(fs *pflag.FlagSet, cmd string) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).")
	fs.StringVar(&o.Context, "context", o.Context, "The kubeconfig context to use.")
	fs.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "The namespace (default: the context's).")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "How long the whole command may wait for the API server.")
	if cmd == "report" {
		fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Report the VPAs of every namespace.")
		fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: table, json, yaml or html.")
		fs.StringVar(&o.Out, "out", o.Out, "Write the output to this file instead of standard output (for -o html).")
	} else {
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
		formats["html"] = true
	}
	if !formats[o.Output] {
		return fmt.Errorf("unsupported output format %q for %s", o.Output, cmd)
	}
	if o.Output == "html" && o.Out == "" {
		return errors.New("-o html needs --out FILE")
	}
	if o.AllNamespaces && o.Namespace != "" {
		return errors.New("-n and -A cannot be used together")
	}
	if o.RequestTimeout <= 0 {
		return errors.New("--request-timeout must be positive")
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

// clientConfig loads the kubeconfig as kubectl does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, with --context and -n applied.
func (o *Options) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	overrides.Context.Namespace = o.Namespace
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

func flagSet(o *Options, cmd string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubectl vpa "+cmd, pflag.ContinueOnError)
	o.AddFlags(fs, cmd)
	return fs
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
	if cmd != "explain" && cmd != "report" {
		return fmt.Errorf("unknown command %q; run kubectl vpa --help", cmd)
	}
	o := NewOptions()
	fs := flagSet(o, cmd)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		synopsis := "kubectl vpa explain NAME [-n NAMESPACE] [-o table|json|yaml] [flags]"
		if cmd == "report" {
			synopsis = "kubectl vpa report [-n NAMESPACE | -A] [-o table|json|yaml|html] [--out FILE] [flags]"
		}
		fmt.Fprintf(stderr, "Usage:\n  %s\n\nFlags:\n%s", synopsis, fs.FlagUsages())
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
	ctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	defer cancel()
	switch cmd {
	case "explain":
		if fs.NArg() != 1 {
			return errors.New("explain needs exactly one VPA name")
		}
		return runExplain(ctx, o, cfg, ns, fs.Arg(0), stdout)
	default:
		if fs.NArg() != 0 {
			return fmt.Errorf("report takes no arguments, got %q", strings.Join(fs.Args(), " "))
		}
		return runReport(ctx, o, cfg, ns, stdout)
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

func runExplain(ctx context.Context, o *Options, cfg *rest.Config, ns, name string, stdout io.Writer) error {
	ix, err := load(ctx, cfg, ns)
	if err != nil {
		return err
	}
	return writeExplain(ix, o, ns, name, stdout)
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

func runReport(ctx context.Context, o *Options, cfg *rest.Config, ns string, stdout io.Writer) error {
	ix, err := load(ctx, cfg, ns)
	if err != nil {
		return err
	}
	w := stdout
	if o.Out != "" {
		f, err := os.Create(o.Out)
		if err != nil {
			return err
		}
		if err := writeReport(ix, o, ns, f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return writeReport(ix, o, ns, w)
}

// writeReport reports the index's VPAs (scope ns, "" for all) in
// o.Output's format.
func writeReport(ix *snapshot.Index, o *Options, ns string, w io.Writer) error {
	r := report.Compute(ix, o.Explain)
	r.Namespace = ns
	switch o.Output {
	case "table":
		return report.WriteTable(w, r)
	case "html":
		return report.WriteHTML(w, r)
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
