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

package history

import (
	"context"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/pkg/promhistory"
	"github.com/openvpa/openvpa/recommender/model"
)

// Sample is one point of a container's history: millicores for CPU, bytes
// for memory.
type Sample struct {
	Time  time.Time
	Value model.ResourceAmount
}

// Container is one container's history, each resource in time order.
type Container struct {
	CPU, Memory []Sample
}

// Pod is one pod's history.
type Pod struct {
	Name string
	// Labels are the pod's labels from the pod-labels metric; nil when the
	// metric has no series for the pod.
	Labels     map[string]string
	Containers map[string]*Container
}

// Namespace is the history of one namespace's pods.
type Namespace struct {
	Name string
	// Start and End bound the points read (both included).
	Start, End time.Time
	Pods       map[string]*Pod
	// Queries is the number of queries the fetch took.
	Queries int
}

// Samples returns the number of CPU and memory points.
func (n *Namespace) Samples() (cpu, memory int) {
	for _, p := range n.Pods {
		for _, c := range p.Containers {
			cpu += len(c.CPU)
			memory += len(c.Memory)
		}
	}
	return cpu, memory
}

// Config is the provider's configuration; every field has an upstream flag
// (recommender/app/options, promhistory.Flags).
type Config = promhistory.Config

// Metrics are the provider's Prometheus metrics.
type Metrics = promhistory.Metrics

// NewMetrics registers the provider's metrics on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics { return promhistory.NewMetrics(reg) }

// ParseDuration parses a Prometheus duration ("8d", "1h", "90s").
func ParseDuration(flag, s string) (time.Duration, error) { return promhistory.ParseDuration(flag, s) }

// MaxPointsPerSeries is the most steps one range query asks for.
const MaxPointsPerSeries = promhistory.MaxPointsPerSeries

// Provider reads history from Prometheus.
type Provider struct {
	cfg     Config
	clock   clock.PassiveClock
	metrics *Metrics
}

// NewProvider returns a provider for cfg. metrics may be nil.
func NewProvider(cfg Config, clk clock.PassiveClock, metrics *Metrics) (*Provider, error) {
	// A client per fetch counts that fetch's points; building one here
	// validates cfg.
	if _, err := promhistory.NewClient(cfg, metrics); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	return &Provider{cfg: cfg, clock: clk, metrics: metrics}, nil
}

// Fetch reads a namespace's history: the points at multiples of the
// resolution from End − Length to End, End being now rounded down to the
// resolution.
func (p *Provider) Fetch(ctx context.Context, namespace string) (*Namespace, error) {
	client, err := promhistory.NewClient(p.cfg, p.metrics)
	if err != nil {
		return nil, err
	}
	end := p.clock.Now().Truncate(p.cfg.Resolution)
	ns := &Namespace{Name: namespace, Start: end.Add(-p.cfg.Length), End: end, Pods: map[string]*Pod{}}
	if err := client.Range(ctx, p.cfg.CPUQuery(namespace), ns.Start, end, func(pt promhistory.Point) {
		c := ns.container(pt.Pod, pt.Container)
		c.CPU = append(c.CPU, Sample{Time: pt.Time, Value: model.CPUAmountFromCores(pt.Value)})
	}); err != nil {
		return nil, err
	}
	if err := client.Range(ctx, p.cfg.MemoryQuery(namespace), ns.Start, end, func(pt promhistory.Point) {
		c := ns.container(pt.Pod, pt.Container)
		c.Memory = append(c.Memory, Sample{Time: pt.Time, Value: model.MemoryAmountFromBytes(pt.Value)})
	}); err != nil {
		return nil, err
	}
	// The labels at End of the pods that have usage history; the newest
	// point wins when a pod has several label series.
	seen := map[string]time.Time{}
	if err := client.Labels(ctx, namespace, end, func(name string, labels map[string]string, t time.Time) {
		pod, ok := ns.Pods[name]
		if !ok || t.Before(seen[name]) {
			return // no usage history, or older labels
		}
		seen[name] = t
		pod.Labels = labels
	}); err != nil {
		return nil, err
	}
	ns.Queries = client.Queries
	ns.sortSamples()
	return ns, nil
}

func (ns *Namespace) container(pod, name string) *Container {
	p, ok := ns.Pods[pod]
	if !ok {
		p = &Pod{Name: pod, Containers: map[string]*Container{}}
		ns.Pods[pod] = p
	}
	c, ok := p.Containers[name]
	if !ok {
		c = &Container{}
		p.Containers[name] = c
	}
	return c
}

// sortSamples puts every container's points in time order (chunks arrive in
// order; this guards against a server that returns them otherwise).
func (ns *Namespace) sortSamples() {
	for _, p := range ns.Pods {
		for _, c := range p.Containers {
			for _, s := range [][]Sample{c.CPU, c.Memory} {
				sort.SliceStable(s, func(i, j int) bool { return s[i].Time.Before(s[j].Time) })
			}
		}
	}
}
