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
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/model"
)

// DefaultMaxSamples is the default of --max-samples: the most points a
// replay reads from Prometheus (about 100 MB of decoded points).
const DefaultMaxSamples = 2_000_000

// ErrNoUsage is the error Load wraps when Prometheus holds no usage of the
// workload in the history's range.
var ErrNoUsage = errors.New("no usage")

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

// NewPrometheusSource returns the defaults: the recommender's history
// flags, no --prometheus-url (so not Enabled) and DefaultMaxSamples.
func NewPrometheusSource() PrometheusSource {
	f := promhistory.DefaultFlags()
	f.Address = ""
	return PrometheusSource{Flags: f, MaxSamples: DefaultMaxSamples}
}

func (s *PrometheusSource) addFlags(fs *pflag.FlagSet) {
	s.AddServerFlags(fs)
	fs.StringVarP(&s.Namespace, "namespace", "n", s.Namespace, "With --prometheus-url: the workload's namespace.")
	fs.StringVar(&s.PodSelector, "pod-selector", s.PodSelector, "With --prometheus-url: replay the pods whose labels (from --metric-for-pod-labels) match this label selector, instead of a KIND/NAME argument.")
}

// AddServerFlags registers --prometheus-url, the recommender's history
// flags and --max-samples: what reads the history, without the workload's
// namespace and selection (kubectl vpa export takes those from its own
// flags).
func (s *PrometheusSource) AddServerFlags(fs *pflag.FlagSet) {
	s.Flags.AddFlags(fs, "prometheus-url")
	fs.IntVar(&s.MaxSamples, "max-samples", s.MaxSamples, "With --prometheus-url: the most points read from Prometheus for one workload; a larger history is an error (0: no bound).")
}

// ValidateServer checks the flags AddServerFlags registers.
func (s *PrometheusSource) ValidateServer() error {
	var errs []error
	if _, err := s.config(); err != nil {
		errs = append(errs, err)
	}
	if s.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("--max-samples must be >= 0, got %d", s.MaxSamples))
	}
	return errors.Join(errs...)
}

func (s *PrometheusSource) validate() []error {
	var errs []error
	if err := s.ValidateServer(); err != nil {
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

// KindPod is the kind of a pod/NAME argument.
const KindPod = "Pod"

// workloadKinds are the kinds of a KIND/NAME argument, by the names and
// short names kubectl knows them under.
var workloadKinds = map[string]string{
	"deployment": target.KindDeployment, "deployments": target.KindDeployment, "deploy": target.KindDeployment,
	"statefulset": target.KindStatefulSet, "statefulsets": target.KindStatefulSet, "sts": target.KindStatefulSet,
	"daemonset": target.KindDaemonSet, "daemonsets": target.KindDaemonSet, "ds": target.KindDaemonSet,
	"replicaset": target.KindReplicaSet, "replicasets": target.KindReplicaSet, "rs": target.KindReplicaSet,
	"job": target.KindJob, "jobs": target.KindJob,
	"cronjob": target.KindCronJob, "cronjobs": target.KindCronJob, "cj": target.KindCronJob,
	"pod": KindPod, "pods": KindPod, "po": KindPod,
}

// ParseWorkload parses a KIND/NAME argument (deployment/web, sts/db, ...)
// into the kind as the API spells it (Deployment, StatefulSet, DaemonSet,
// ReplicaSet, Job, CronJob or Pod) and the name.
func ParseWorkload(workload string) (kind, name string, err error) {
	k, name, ok := strings.Cut(workload, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("the workload must be KIND/NAME, such as deployment/web, got %q", workload)
	}
	if !dnsName.MatchString(name) {
		return "", "", fmt.Errorf("workload %q: %q is not a valid object name", workload, name)
	}
	kind, ok = workloadKinds[strings.ToLower(k)]
	if !ok {
		return "", "", fmt.Errorf("workload %q: unknown kind %q (known: deployment, statefulset, daemonset, replicaset, job, cronjob, pod)", workload, k)
	}
	return kind, name, nil
}

// workloadPodRegex returns the expression of the names of the pods a
// controller of that kind names after NAME (fully anchored, as Prometheus's
// =~ matches): NAME-HASH-SUFFIX for a
// Deployment's, NAME-ORDINAL for a StatefulSet's, NAME-SUFFIX for a
// ReplicaSet's, DaemonSet's or Job's, NAME-TIME-SUFFIX for a CronJob's, and
// NAME itself for a pod.
func workloadPodRegex(workload string) (string, error) {
	kind, name, err := ParseWorkload(workload)
	if err != nil {
		return "", err
	}
	n := regexp.QuoteMeta(name)
	switch kind {
	case target.KindDeployment:
		return n + "-" + podHash + "-" + podSuffix, nil
	case target.KindStatefulSet:
		return n + "-[0-9]+", nil
	case target.KindCronJob:
		return n + "-[0-9]+-" + podSuffix, nil
	case KindPod:
		return n, nil
	default: // ReplicaSet, DaemonSet, Job
		return n + "-" + podSuffix, nil
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
	// Each pod's own points, apart and unpaired, as the recommender's
	// history provider reads them.
	pods := map[string]*history.Pod{}
	own := func(p promhistory.Point) *history.Container {
		pod := pods[p.Pod]
		if pod == nil {
			pod = &history.Pod{Name: p.Pod, Containers: map[string]*history.Container{}}
			pods[p.Pod] = pod
		}
		c := pod.Containers[p.Container]
		if c == nil {
			c = &history.Container{}
			pod.Containers[p.Container] = c
		}
		return c
	}
	at := func(p promhistory.Point) *point {
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
		milli := model.CPUAmountFromCores(p.Value)
		c := own(p)
		c.CPU = append(c.CPU, history.Sample{Time: p.Time, Value: milli})
		pt := at(p)
		pt.cpu, pt.hasCPU = max(pt.cpu, model.CoresFromCPUAmount(milli)), true
	}); err != nil {
		return nil, st, err
	}
	if err := client.Range(ctx, cfg.PodsMemoryQuery(s.Namespace, podRegex), st.Start, st.End, func(p promhistory.Point) {
		bytes := model.MemoryAmountFromBytes(p.Value)
		c := own(p)
		c.Memory = append(c.Memory, history.Sample{Time: p.Time, Value: bytes})
		pt := at(p)
		pt.mem, pt.hasMem = max(pt.mem, model.BytesFromMemoryAmount(bytes)), true
	}); err != nil {
		return nil, st, err
	}
	st.Pods = len(pods)
	w := &Workload{Name: s.workloadName()}
	for _, p := range pods {
		w.Pods = append(w.Pods, p)
	}
	sortPods(w.Pods)
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
		return nil, st, fmt.Errorf("%w of %s in namespace %s in Prometheus at %s from %s to %s (queries %s and %s)", ErrNoUsage,
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
