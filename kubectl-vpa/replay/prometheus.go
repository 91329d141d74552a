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

package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/openvpa/openvpa/pkg/promhistory"
	"github.com/openvpa/openvpa/recommender/model"
)

// DefaultMaxSamples is the default of --max-samples: the most points a
// replay reads from Prometheus (about 100 MB of decoded points).
const DefaultMaxSamples = 2_000_000

// PrometheusSource reads a workload's usage history from Prometheus with
// the recommender's history queries (pkg/promhistory) instead of a trace
// file: --prometheus-url, --namespace, the workload and the recommender's
// history flags.
type PrometheusSource struct {
	// Flags are the recommender's history flags; Flags.Address is
	// --prometheus-url, empty when the replay reads a trace file.
	Flags promhistory.Flags
	// Namespace is --namespace.
	Namespace string
	// Workload is the KIND/NAME argument; PodSelector is --pod-selector.
	// Exactly one is set.
	Workload    string
	PodSelector string
	// MaxSamples is --max-samples.
	MaxSamples int
	// Now returns the current time (time.Now when nil); the history ends
	// at Now rounded down to the resolution, as the recommender's does.
	Now func() time.Time
}

// Enabled reports whether the replay reads Prometheus.
func (s *PrometheusSource) Enabled() bool { return s.Flags.Address != "" }

func newPrometheusSource() PrometheusSource {
	f := promhistory.DefaultFlags()
	f.Address = ""
	return PrometheusSource{Flags: f, MaxSamples: DefaultMaxSamples}
}

func (s *PrometheusSource) addFlags(fs *pflag.FlagSet) {
	s.Flags.AddFlags(fs, "prometheus-url")
	fs.StringVarP(&s.Namespace, "namespace", "n", s.Namespace, "With --prometheus-url: the workload's namespace.")
	fs.StringVar(&s.PodSelector, "pod-selector", s.PodSelector, "With --prometheus-url: replay the pods whose labels (from --metric-for-pod-labels) match this label selector, instead of a KIND/NAME argument.")
	fs.IntVar(&s.MaxSamples, "max-samples", s.MaxSamples, "With --prometheus-url: the most points read from Prometheus; a larger history is an error (0: no bound).")
}

func (s *PrometheusSource) validate() []error {
	var errs []error
	if _, err := s.config(); err != nil {
		errs = append(errs, err)
	}
	if s.Namespace == "" {
		errs = append(errs, errors.New("--prometheus-url needs --namespace"))
	}
	switch {
	case s.Workload == "" && s.PodSelector == "":
		errs = append(errs, errors.New("--prometheus-url needs the workload: KIND/NAME (such as deployment/web) or --pod-selector"))
	case s.Workload != "" && s.PodSelector != "":
		errs = append(errs, errors.New("give the workload as KIND/NAME or as --pod-selector, not both"))
	case s.Workload != "":
		if _, err := workloadPodRegex(s.Workload); err != nil {
			errs = append(errs, err)
		}
	default:
		if _, err := labels.Parse(s.PodSelector); err != nil {
			errs = append(errs, fmt.Errorf("--pod-selector: %w", err))
		}
	}
	if s.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("--max-samples must be >= 0, got %d", s.MaxSamples))
	}
	return errs
}

func (s *PrometheusSource) config() (promhistory.Config, error) {
	c, err := s.Flags.Config("prometheus-url")
	c.MaxSamples = s.MaxSamples
	return c, err
}

// Controllers name their pods after themselves with a random suffix of 5
// characters, and a Deployment's ReplicaSets after it with the pod
// template's hash (up to 10 characters), both in the alphabet of
// k8s.io/apimachinery/pkg/util/rand (no vowels, no 0, 1 or 3, so that no
// word is spelled).
const (
	podSuffix = "[bcdfghjklmnpqrstvwxz2456789]{5}"
	podHash   = "[bcdfghjklmnpqrstvwxz2456789]{1,10}"
)

// workloadPodRegex returns the expression of the names of the pods a
// controller of that kind names after NAME (fully anchored, as Prometheus's
// =~ matches): NAME-HASH-SUFFIX for a
// Deployment's, NAME-ORDINAL for a StatefulSet's, NAME-SUFFIX for a
// ReplicaSet's, DaemonSet's or Job's, NAME-TIME-SUFFIX for a CronJob's, and
// NAME itself for a pod.
func workloadPodRegex(workload string) (string, error) {
	kind, name, ok := strings.Cut(workload, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("the workload must be KIND/NAME, such as deployment/web, got %q", workload)
	}
	if !dnsName.MatchString(name) {
		return "", fmt.Errorf("workload %q: %q is not a valid object name", workload, name)
	}
	n := regexp.QuoteMeta(name)
	switch strings.ToLower(kind) {
	case "deployment", "deployments", "deploy":
		return n + "-" + podHash + "-" + podSuffix, nil
	case "statefulset", "statefulsets", "sts":
		return n + "-[0-9]+", nil
	case "replicaset", "replicasets", "rs", "daemonset", "daemonsets", "ds", "job", "jobs":
		return n + "-" + podSuffix, nil
	case "cronjob", "cronjobs", "cj":
		return n + "-[0-9]+-" + podSuffix, nil
	case "pod", "pods", "po":
		return n, nil
	default:
		return "", fmt.Errorf("workload %q: unknown kind %q (known: deployment, statefulset, daemonset, replicaset, job, cronjob, pod)", workload, kind)
	}
}

var dnsName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// Name is how the report names the history.
func (s *PrometheusSource) Name() string {
	return fmt.Sprintf("%s %s/%s", s.Flags.Address, s.Namespace, s.workloadName())
}

func (s *PrometheusSource) workloadName() string {
	if s.Workload != "" {
		return s.Workload
	}
	return "pods{" + s.PodSelector + "}"
}

// PrometheusStats say what a Load read.
type PrometheusStats struct {
	Start, End time.Time
	Pods       int
	// Queries and Points are the queries run and the points they returned.
	Queries, Points int
	// Unpaired are the (container, step) pairs with a CPU point but no
	// memory point, or the reverse: not a sample.
	Unpaired int
}

// Load reads the workload's history and returns it as a trace of one
// workload (Workload's name, or the selector's) whose containers are the
// container names of its pods. Pods of a workload come and go, and a
// replay runs one pod: at each step each container's CPU and memory are the
// highest of the workload's pods at that step (those that ran then), so
// that the replayed request covers every replica. CPU is in whole
// millicores and memory in whole bytes, as the recommender keeps them.
func (s *PrometheusSource) Load(ctx context.Context) (_ *Trace, st PrometheusStats, err error) {
	cfg, err := s.config()
	if err != nil {
		return nil, st, err
	}
	client, err := promhistory.NewClient(cfg, nil)
	if err != nil {
		return nil, st, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	st.End = now().Truncate(cfg.Resolution)
	st.Start = st.End.Add(-cfg.Length)
	defer func() { st.Queries, st.Points = client.Queries, client.Samples }()

	podRegex := ""
	if s.Workload != "" {
		podRegex, _ = workloadPodRegex(s.Workload)
	} else {
		sel, _ := labels.Parse(s.PodSelector)
		var pods []string
		if err := client.Labels(ctx, s.Namespace, st.End, func(pod string, l map[string]string, _ time.Time) {
			if sel.Matches(labels.Set(l)) {
				pods = append(pods, pod)
			}
		}); err != nil {
			return nil, st, err
		}
		if len(pods) == 0 {
			return nil, st, fmt.Errorf("no pod of namespace %s has labels matching %q in %s at %s (a range such as %s[%s] for --metric-for-pod-labels also finds pods that are gone)",
				s.Namespace, s.PodSelector, cfg.LabelsQuery(s.Namespace), st.End.Format(time.RFC3339), cfg.PodLabelsMetric, s.Flags.HistoryLength)
		}
		sort.Strings(pods)
		pods = dedupe(pods)
		podRegex = promhistory.PodNamesRegex(pods)
	}

	type point struct {
		cpu, mem       float64
		hasCPU, hasMem bool
	}
	byContainer := map[string]map[time.Time]*point{}
	pods := map[string]bool{}
	at := func(p promhistory.Point) *point {
		pods[p.Pod] = true
		m := byContainer[p.Container]
		if m == nil {
			m = map[time.Time]*point{}
			byContainer[p.Container] = m
		}
		t := p.Time.UTC()
		pt := m[t]
		if pt == nil {
			pt = &point{}
			m[t] = pt
		}
		return pt
	}
	if err := client.Range(ctx, cfg.PodsCPUQuery(s.Namespace, podRegex), st.Start, st.End, func(p promhistory.Point) {
		pt := at(p)
		pt.cpu, pt.hasCPU = max(pt.cpu, model.CoresFromCPUAmount(model.CPUAmountFromCores(p.Value))), true
	}); err != nil {
		return nil, st, err
	}
	if err := client.Range(ctx, cfg.PodsMemoryQuery(s.Namespace, podRegex), st.Start, st.End, func(p promhistory.Point) {
		pt := at(p)
		pt.mem, pt.hasMem = max(pt.mem, model.BytesFromMemoryAmount(model.MemoryAmountFromBytes(p.Value))), true
	}); err != nil {
		return nil, st, err
	}
	st.Pods = len(pods)
	w := &Workload{Name: s.workloadName()}
	names := make([]string, 0, len(byContainer))
	for n := range byContainer {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := &Container{Name: n}
		for t, p := range byContainer[n] {
			if !p.hasCPU || !p.hasMem {
				st.Unpaired++
				continue
			}
			c.Samples = append(c.Samples, Sample{Time: t, CPU: p.cpu, Memory: p.mem})
		}
		if len(c.Samples) == 0 {
			continue
		}
		sort.Slice(c.Samples, func(i, j int) bool { return c.Samples[i].Time.Before(c.Samples[j].Time) })
		w.Containers = append(w.Containers, c)
	}
	if len(w.Containers) == 0 {
		return nil, st, fmt.Errorf("no usage of %s in namespace %s in Prometheus at %s from %s to %s (queries %s and %s)",
			s.workloadName(), s.Namespace, cfg.Address, st.Start.Format(time.RFC3339), st.End.Format(time.RFC3339),
			cfg.PodsCPUQuery(s.Namespace, podRegex), cfg.PodsMemoryQuery(s.Namespace, podRegex))
	}
	tr := &Trace{Workloads: []*Workload{w}}
	tr.Rows = tr.Samples()
	return tr, st, nil
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func (st PrometheusStats) print(w io.Writer, name string, tr *Trace, took time.Duration) {
	fmt.Fprintf(w, "read %s: %s to %s, %d pods, %d queries, %d points, %d samples", name, st.Start.Format(time.RFC3339), st.End.Format(time.RFC3339),
		st.Pods, st.Queries, st.Points, tr.Samples())
	if st.Unpaired > 0 {
		fmt.Fprintf(w, ", %d steps with only one of CPU and memory dropped", st.Unpaired)
	}
	fmt.Fprintf(w, " (%s)\n", took.Round(time.Millisecond))
}
