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

// Package replaytest generates a workload's usage history three ways: as
// the trace CSV of `kubectl vpa replay --trace`, as cAdvisor-shaped
// OpenMetrics series for backfilling a real Prometheus (promtool tsdb
// create-blocks-from openmetrics), and as the points Prometheus answers the
// history queries with, for a fake server. The three hold the same history,
// so a replay from Prometheus must report what the replay of the CSV does.
//
// Time is cut into steps of Step (the --history-resolution the replay reads
// with). Usage is constant within a step (t − Step, t]: a container's CPU
// counter grows at that step's rate and its memory gauge holds that step's
// value at every scrape in it, so rate(cpu[Step]) and the gauge evaluated at
// t give the step's values. A pod running over (From, To] is scraped from
// From + Scrape to To − Scrape, so that it has both points at the steps
// From + Step … To and neither before nor after, whether the server's
// windows are left-open or closed. CPU rates sit half a millicore above a
// whole number of millicores, so the float rounding of rate() never changes
// the millicores the replay keeps.
package replaytest

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Series label names: upstream's defaults (promhistory.DefaultFlags).
const (
	CadvisorJob = "kubernetes-cadvisor"
	PodsJob     = "kubernetes-pods"
)

// Pod is one pod of the workload, running over (From, To]; both are
// multiples of the history's Step.
type Pod struct {
	Name     string
	Labels   map[string]string
	From, To time.Time
}

// History is a workload's usage in one namespace.
type History struct {
	Namespace string
	// Workload names the trace's workload (the replay's KIND/NAME).
	Workload   string
	Containers []string
	Pods       []Pod
	Step       time.Duration
	// Usage is a container's usage in the step ending at t: CPU in
	// millicores and memory in bytes.
	Usage func(pod, container string, t time.Time) (milli, bytes int64)
}

// Synthetic is a Deployment's history over the days before end (a
// multiple of five minutes): two replicas for six days, then a rollout to
// one pod of a new template that overlaps the old ones for two hours. The
// containers' memory follows the time of day with spikes some days, so a
// replay sees updates and OOM kills; CPU follows the time of day too.
func Synthetic(namespace string, end time.Time, days int) History {
	start := end.Add(-time.Duration(days) * 24 * time.Hour)
	roll := start.Add(6 * 24 * time.Hour)
	labels := func(hash string) map[string]string {
		return map[string]string{"app": "web", "pod-template-hash": hash}
	}
	return History{
		Namespace:  namespace,
		Workload:   "deployment/web",
		Containers: []string{"app", "sidecar"},
		Step:       5 * time.Minute,
		Pods: []Pod{
			{Name: "web-5d8f7c9b4-x2k9q", Labels: labels("5d8f7c9b4"), From: start, To: roll.Add(2 * time.Hour)},
			{Name: "web-5d8f7c9b4-7hqzt", Labels: labels("5d8f7c9b4"), From: start.Add(time.Hour), To: roll.Add(time.Hour)},
			{Name: "web-6b9c8d7f5-m4n2p", Labels: labels("6b9c8d7f5"), From: roll, To: end},
			// Another workload of the namespace, whose name starts alike: never
			// part of deployment/web.
			{Name: "web-canary-0", Labels: map[string]string{"app": "web-canary"}, From: start, To: end},
		},
		Usage: syntheticUsage,
	}
}

func syntheticUsage(pod, container string, t time.Time) (int64, int64) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/%d", pod, container, t.Unix())
	noise := int64(h.Sum64() % 1000) // 0..999
	day := float64(t.Unix()%86400) / 86400
	wave := (1 - math.Cos(2*math.Pi*day)) / 2 // 0 at midnight, 1 at noon
	const mi = 1 << 20
	if strings.HasPrefix(pod, "web-canary") {
		return 900 + noise, 2048*mi + noise*mi
	}
	if container == "sidecar" {
		return 10 + noise%20, 40*mi + int64(wave*8*mi) + noise*1024
	}
	milli := 100 + int64(wave*400) + noise/4
	bytes := 300*mi + int64(wave*200*mi) + noise*64*1024
	// A spike at 13:00 every third day, higher after the rollout.
	if t.Unix()/86400%3 == 0 && t.UTC().Hour() == 13 && t.UTC().Minute() < 20 {
		bytes += 250 * mi
		if strings.HasPrefix(pod, "web-6b9") {
			bytes += 100 * mi
		}
	}
	return milli, bytes
}

// member reports whether the pod belongs to the history's workload.
func (h History) member(p Pod) bool { return !strings.HasPrefix(p.Name, "web-canary") }

// steps returns the steps (From, To] of p.
func (h History) steps(p Pod) []time.Time {
	var out []time.Time
	for t := p.From.Add(h.Step); !t.After(p.To); t = t.Add(h.Step) {
		out = append(out, t)
	}
	return out
}

// WriteCSV writes the workload's history as a replay trace: at each step,
// each container's highest CPU and memory over the workload's pods running
// then (what the replay from Prometheus reads), CPU in whole millicores.
func (h History) WriteCSV(w io.Writer) error {
	type key struct {
		t time.Time
		c string
	}
	type usage struct{ milli, bytes int64 }
	peaks := map[key]usage{}
	for _, p := range h.Pods {
		if !h.member(p) {
			continue
		}
		for _, t := range h.steps(p) {
			for _, c := range h.Containers {
				m, b := h.Usage(p.Name, c, t)
				u := peaks[key{t, c}]
				peaks[key{t, c}] = usage{milli: max(u.milli, m), bytes: max(u.bytes, b)}
			}
		}
	}
	keys := make([]key, 0, len(peaks))
	for k := range peaks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if !keys[i].t.Equal(keys[j].t) {
			return keys[i].t.Before(keys[j].t)
		}
		return keys[i].c < keys[j].c
	})
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "timestamp,workload,container,cpu_cores,memory_bytes")
	for _, k := range keys {
		u := peaks[k]
		fmt.Fprintf(bw, "%d,%s,%s,%s,%d\n", k.t.Unix(), h.Workload, k.c, strconv.FormatFloat(float64(u.milli)/1000, 'f', -1, 64), u.bytes)
	}
	return bw.Flush()
}

// WriteOpenMetrics writes every pod's CPU counters, memory gauges and pod
// labels series (up{job="kubernetes-pods"} with pod_label_ prefixes),
// scraped every scrape (a divisor of Step), ending with # EOF.
func (h History) WriteOpenMetrics(w io.Writer, scrape time.Duration) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	ts := func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	stepEnd := func(t time.Time) time.Time {
		if s := t.Truncate(h.Step); !s.Equal(t) {
			return s.Add(h.Step)
		}
		return t
	}
	for _, p := range h.Pods {
		for _, c := range h.Containers {
			total := 0.0
			for t := p.From.Add(scrape); t.Before(p.To); t = t.Add(scrape) {
				milli, _ := h.Usage(p.Name, c, stepEnd(t))
				total += (float64(milli) + 0.5) / 1000 * scrape.Seconds()
				fmt.Fprintf(bw, "container_cpu_usage_seconds_total{%s} %s %s\n", h.containerLabels(p, c), strconv.FormatFloat(total, 'g', 17, 64), ts(t))
			}
		}
	}
	for _, p := range h.Pods {
		for _, c := range h.Containers {
			for t := p.From.Add(scrape); t.Before(p.To); t = t.Add(scrape) {
				_, bytes := h.Usage(p.Name, c, stepEnd(t))
				fmt.Fprintf(bw, "container_memory_working_set_bytes{%s} %d %s\n", h.containerLabels(p, c), bytes, ts(t))
			}
		}
	}
	for _, p := range h.Pods {
		for t := p.From.Add(scrape); t.Before(p.To); t = t.Add(scrape) {
			fmt.Fprintf(bw, "up{%s} 1 %s\n", h.podLabels(p), ts(t))
		}
	}
	fmt.Fprintln(bw, "# EOF")
	return bw.Flush()
}

func (h History) containerLabels(p Pod, c string) string {
	return fmt.Sprintf("job=%q,namespace=%q,pod_name=%q,name=%q", CadvisorJob, h.Namespace, p.Name, c)
}

func (h History) podLabels(p Pod) string {
	keys := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "job=%q,kubernetes_namespace=%q,kubernetes_pod_name=%q", PodsJob, h.Namespace, p.Name)
	for _, k := range keys {
		fmt.Fprintf(&b, ",pod_label_%s=%q", sanitize.Replace(k), p.Labels[k])
	}
	return b.String()
}

var sanitize = strings.NewReplacer(".", "_", "/", "_", "-", "_")

// Series is one series of a range query's answer.
type Series struct {
	Labels map[string]string
	Times  []time.Time
	Values []float64
}

var podMatcher = regexp.MustCompile(`pod_name=~"((?:[^"\\]|\\.)*)"`)

// Answer returns what Prometheus answers the replay's range query with
// over [start, end] at the history's Step: the series of the pods whose
// names match the query's pod_name=~ matcher, CPU as rate() gives it
// (cores, half a millicore above the millicores) for a query that starts
// with rate(, memory in bytes otherwise.
func (h History) Answer(query string, start, end time.Time) ([]Series, error) {
	m := podMatcher.FindStringSubmatch(query)
	if m == nil {
		return nil, fmt.Errorf("query %s has no pod_name=~ matcher", query)
	}
	expr, err := strconv.Unquote(`"` + m[1] + `"`)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil, err
	}
	cpu := strings.HasPrefix(query, "rate(")
	var out []Series
	for _, p := range h.Pods {
		if !re.MatchString(p.Name) {
			continue
		}
		for _, c := range h.Containers {
			s := Series{Labels: map[string]string{"job": CadvisorJob, "namespace": h.Namespace, "pod_name": p.Name, "name": c}}
			for _, t := range h.steps(p) {
				if t.Before(start) || t.After(end) {
					continue
				}
				milli, bytes := h.Usage(p.Name, c, t)
				v := float64(bytes)
				if cpu {
					v = (float64(milli) + 0.5) / 1000
				}
				s.Times, s.Values = append(s.Times, t), append(s.Values, v)
			}
			if len(s.Times) > 0 {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// LabelSeries returns the pod labels series of the pods running at t, as
// the instant query of the labels metric answers.
func (h History) LabelSeries(t time.Time) []map[string]string {
	var out []map[string]string
	for _, p := range h.Pods {
		if t.Before(p.From) || t.After(p.To) {
			continue
		}
		l := map[string]string{"__name__": "up", "job": PodsJob, "kubernetes_namespace": h.Namespace, "kubernetes_pod_name": p.Name}
		for k, v := range p.Labels {
			l["pod_label_"+sanitize.Replace(k)] = v
		}
		out = append(out, l)
	}
	return out
}
