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

// Package historytest generates cAdvisor-shaped usage history as
// OpenMetrics text, for backfilling a real Prometheus
// (promtool tsdb create-blocks-from openmetrics), together with the samples
// the history provider should read back from it.
//
// Usage is constant within each hour (h−1h, h]: a container's CPU counter
// grows at that hour's rate and its memory gauge holds that hour's value, so
// rate(cpu[1h]) and the gauge evaluated at h give exactly the hour's values.
// CPU rates sit half a millicore above a whole number of millicores, so the
// float rounding of rate() never changes the millicores the model keeps.
package historytest

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/model"
)

// Usage returns a container's usage in the hour ending at h: CPU in
// millicores and memory in bytes.
type Usage func(h time.Time) (cpuMilli, memBytes int64)

// Container is one container's generated history.
type Container struct {
	Name  string
	Usage Usage
}

// Pod is one pod's generated history.
type Pod struct {
	Namespace, Name string
	// Labels go on the pod labels series (up{job="kubernetes-pods"} with
	// pod_label_ prefixes); nil writes no such series, as for a pod the
	// labels metric does not cover.
	Labels     map[string]string
	Containers []Container
}

// Options shape the series. The zero value of a field means upstream's
// default label names.
type Options struct {
	// From and To bound the scrapes (To included).
	From, To time.Time
	// Scrape is the interval between points (default 1m).
	Scrape time.Duration
}

// Series label names, upstream's defaults.
const (
	CadvisorJob = "kubernetes-cadvisor"
	PodsJob     = "kubernetes-pods"
)

func hourEnd(t time.Time) time.Time {
	if h := t.Truncate(time.Hour); h.Equal(t) {
		return t
	} else {
		return h.Add(time.Hour)
	}
}

// WriteOpenMetrics writes the pods' CPU counters, memory gauges and pod
// labels series, ending with # EOF.
func WriteOpenMetrics(w io.Writer, pods []Pod, o Options) error {
	if o.Scrape <= 0 {
		o.Scrape = time.Minute
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	ts := func(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64) }
	// CPU counters.
	for _, p := range pods {
		for _, c := range p.Containers {
			lbl := containerLabels(p, c)
			total := 0.0
			for t := o.From; !t.After(o.To); t = t.Add(o.Scrape) {
				milli, _ := c.Usage(hourEnd(t))
				total += (float64(milli) + 0.5) / 1000 * o.Scrape.Seconds()
				fmt.Fprintf(bw, "container_cpu_usage_seconds_total{%s} %s %s\n", lbl, strconv.FormatFloat(total, 'g', 17, 64), ts(t))
			}
		}
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			lbl := containerLabels(p, c)
			for t := o.From; !t.After(o.To); t = t.Add(o.Scrape) {
				_, mem := c.Usage(hourEnd(t))
				fmt.Fprintf(bw, "container_memory_working_set_bytes{%s} %d %s\n", lbl, mem, ts(t))
			}
		}
	}
	for _, p := range pods {
		if p.Labels == nil {
			continue
		}
		keys := make([]string, 0, len(p.Labels))
		for k := range p.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		fmt.Fprintf(&b, "job=%q,kubernetes_namespace=%q,kubernetes_pod_name=%q", PodsJob, p.Namespace, p.Name)
		for _, k := range keys {
			fmt.Fprintf(&b, ",pod_label_%s=%q", strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(k), p.Labels[k])
		}
		for t := o.From; !t.After(o.To); t = t.Add(o.Scrape) {
			fmt.Fprintf(bw, "up{%s} 1 %s\n", b.String(), ts(t))
		}
	}
	fmt.Fprintln(bw, "# EOF")
	return bw.Flush()
}

func containerLabels(p Pod, c Container) string {
	return fmt.Sprintf("job=%q,namespace=%q,pod_name=%q,name=%q", CadvisorJob, p.Namespace, p.Name, c.Name)
}

// Expected is what the provider reads back for a container over
// [end − length, end] at a step of resolution (a multiple of an hour).
func Expected(c Container, end time.Time, length, resolution time.Duration) *history.Container {
	out := &history.Container{}
	for t := end.Add(-length); !t.After(end); t = t.Add(resolution) {
		milli, mem := c.Usage(t)
		out.CPU = append(out.CPU, history.Sample{Time: t, Value: model.ResourceAmount(milli)})
		out.Memory = append(out.Memory, history.Sample{Time: t, Value: model.ResourceAmount(mem)})
	}
	return out
}

// Feed adds a container's history to an aggregate through a container state
// of its own, as the recommender does for a pod that is gone.
func Feed(a *model.AggregateState, c *history.Container) {
	cs := model.NewContainerState(a)
	for _, s := range c.CPU {
		cs.AddCPUSample(s.Time, s.Value)
	}
	for _, s := range c.Memory {
		cs.AddMemorySample(s.Time, s.Value)
	}
}
