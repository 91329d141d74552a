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
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	prommodel "github.com/prometheus/common/model"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

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

// Metrics are the provider's Prometheus metrics.
type Metrics struct {
	// Requests and Duration are upstream's
	// vpa_recommender_prometheus_client_api_requests_{count,duration_seconds}.
	Requests *prometheus.CounterVec
	Duration *prometheus.HistogramVec
	// Splits counts range queries split because Prometheus refused them.
	Splits prometheus.Counter
}

// NewMetrics registers the provider's metrics on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "vpa_recommender", Name: "prometheus_client_api_requests_count",
			Help: "Requests to the Prometheus history provider, by HTTP code and method.",
		}, []string{"code", "method"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "vpa_recommender", Name: "prometheus_client_api_requests_duration_seconds",
			Help: "Duration of requests to the Prometheus history provider, by HTTP code and method.",
		}, []string{"code", "method"}),
		Splits: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "vpa_recommender", Name: "history_query_splits_total",
			Help: "Range queries of the history provider split in two because Prometheus refused them as too large.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Requests, m.Duration, m.Splits)
	}
	return m
}

// Provider reads history from Prometheus.
type Provider struct {
	cfg     Config
	api     promv1.API
	clock   clock.PassiveClock
	metrics *Metrics
}

// NewProvider returns a provider for cfg. metrics may be nil.
func NewProvider(cfg Config, clk clock.PassiveClock, metrics *Metrics) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Insecure {
		transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --prometheus-insecure asks for it
	}
	var rt http.RoundTripper = authRoundTripper{cfg: cfg, next: transport}
	rt = promhttp.InstrumentRoundTripperCounter(metrics.Requests, promhttp.InstrumentRoundTripperDuration(metrics.Duration, rt))
	client, err := api.NewClient(api.Config{Address: cfg.Address, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", cfg.Address, err)
	}
	return &Provider{cfg: cfg, api: promv1.NewAPI(client), clock: clk, metrics: metrics}, nil
}

// authRoundTripper adds basic auth or a bearer token to each request.
// (prometheus/common/config has one, but pulls in OAuth2, JWT and YAML
// modules for what is a header.)
type authRoundTripper struct {
	cfg  Config
	next http.RoundTripper
}

func (a authRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	c := a.cfg
	var auth string
	switch {
	case c.Username != "" || c.Password != "":
		req = req.Clone(req.Context())
		req.SetBasicAuth(c.Username, c.Password)
		return a.next.RoundTrip(req)
	case c.BearerToken != "":
		auth = c.BearerToken
	case c.BearerTokenFile != "":
		b, err := os.ReadFile(c.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading --prometheus-bearer-token-file: %w", err)
		}
		auth = strings.TrimSpace(string(b))
	default:
		return a.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+auth)
	return a.next.RoundTrip(req)
}

// Fetch reads a namespace's history: the points at multiples of the
// resolution from End − Length to End, End being now rounded down to the
// resolution.
func (p *Provider) Fetch(ctx context.Context, namespace string) (*Namespace, error) {
	end := p.clock.Now().Truncate(p.cfg.Resolution)
	ns := &Namespace{Name: namespace, Start: end.Add(-p.cfg.Length), End: end, Pods: map[string]*Pod{}}
	for _, q := range []struct {
		query  string
		memory bool
	}{{p.cfg.CPUQuery(namespace), false}, {p.cfg.MemoryQuery(namespace), true}} {
		// Chunks of at most maxPoints steps, oldest first, so that each
		// container's points arrive in time order.
		step := p.cfg.Resolution
		chunk := time.Duration(p.cfg.maxPoints()-1) * step
		for from := ns.Start; !from.After(end); from = from.Add(chunk + step) {
			to := from.Add(chunk)
			if to.After(end) {
				to = end
			}
			if err := p.rangeQuery(ctx, ns, q.query, from, to, q.memory); err != nil {
				return nil, err
			}
		}
	}
	if err := p.labels(ctx, ns); err != nil {
		return nil, err
	}
	ns.sortSamples()
	return ns, nil
}

// rangeQuery runs one range query and adds its points to ns. A query that
// Prometheus refuses as too large is split in two halves, down to one step.
func (p *Provider) rangeQuery(ctx context.Context, ns *Namespace, query string, from, to time.Time, memory bool) error {
	qctx, cancel := context.WithTimeout(ctx, p.cfg.QueryTimeout)
	defer cancel()
	ns.Queries++
	v, warnings, err := p.api.QueryRange(qctx, query, promv1.Range{Start: from, End: to, Step: p.cfg.Resolution}, promv1.WithTimeout(p.cfg.QueryTimeout))
	if err != nil {
		steps := int(to.Sub(from) / p.cfg.Resolution)
		if tooLarge(err) && steps >= 1 {
			p.metrics.Splits.Inc()
			mid := from.Add(time.Duration(steps/2) * p.cfg.Resolution)
			klog.FromContext(ctx).V(2).Info("Prometheus refused a history query as too large; splitting it", "namespace", ns.Name,
				"from", from, "to", to, "err", err.Error())
			if err := p.rangeQuery(ctx, ns, query, from, mid, memory); err != nil {
				return err
			}
			return p.rangeQuery(ctx, ns, query, mid.Add(p.cfg.Resolution), to, memory)
		}
		return fmt.Errorf("querying Prometheus at %s for %s from %s to %s: %w", p.cfg.Address, query, from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	if len(warnings) > 0 {
		klog.FromContext(ctx).Info("Prometheus warned about a history query", "query", query, "warnings", warnings)
	}
	m, ok := v.(prommodel.Matrix)
	if !ok {
		return fmt.Errorf("history query %s: expected a matrix, got a %s", query, v.Type())
	}
	for _, s := range m {
		pod, ctr := string(s.Metric[prommodel.LabelName(p.cfg.ContainerPodNameLabel)]), string(s.Metric[prommodel.LabelName(p.cfg.ContainerNameLabel)])
		if pod == "" || ctr == "" {
			continue // excluded by the selector; a server that ignores matchers
		}
		c := ns.container(pod, ctr)
		dst := &c.CPU
		if memory {
			dst = &c.Memory
		}
		for _, pt := range s.Values {
			val := float64(pt.Value)
			if val < 0 || val != val { // negative or NaN: not a usage
				continue
			}
			amount := model.CPUAmountFromCores(val)
			if memory {
				amount = model.MemoryAmountFromBytes(val)
			}
			*dst = append(*dst, Sample{Time: pt.Timestamp.Time(), Value: amount})
		}
	}
	return nil
}

// tooLarge reports whether Prometheus refused a query for its size: too
// many samples loaded (--query.max-samples) or too many points per series.
func tooLarge(err error) bool {
	var perr *promv1.Error
	if !errors.As(err, &perr) {
		return false
	}
	msg := perr.Msg
	return strings.Contains(msg, "too many samples") || strings.Contains(msg, "maximum resolution")
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

// labels reads the pods' labels at End. The query gives a vector: the pods
// seen in the last five minutes for an instant selector, or in the whole
// range for a range selector (see LabelsQuery). A matrix (from a server that
// evaluates the range selector as such) counts each series' latest point.
func (p *Provider) labels(ctx context.Context, ns *Namespace) error {
	qctx, cancel := context.WithTimeout(ctx, p.cfg.QueryTimeout)
	defer cancel()
	query := p.cfg.LabelsQuery(ns.Name)
	ns.Queries++
	v, _, err := p.api.Query(qctx, query, ns.End, promv1.WithTimeout(p.cfg.QueryTimeout))
	if err != nil {
		return fmt.Errorf("querying Prometheus at %s for pod labels (%s): %w", p.cfg.Address, query, err)
	}
	seen := map[string]time.Time{}
	set := func(metric prommodel.Metric, t time.Time) {
		name := string(metric[prommodel.LabelName(p.cfg.PodNameLabel)])
		pod, ok := ns.Pods[name]
		if !ok || t.Before(seen[name]) {
			return // no usage history, or older labels
		}
		seen[name] = t
		pod.Labels = map[string]string{}
		for k, v := range metric {
			if l, ok := strings.CutPrefix(string(k), p.cfg.PodLabelPrefix); ok && l != "" {
				pod.Labels[l] = string(v)
			}
		}
	}
	switch v := v.(type) {
	case prommodel.Vector:
		for _, s := range v {
			set(s.Metric, s.Timestamp.Time())
		}
	case prommodel.Matrix:
		for _, s := range v {
			if len(s.Values) > 0 {
				set(s.Metric, s.Values[len(s.Values)-1].Timestamp.Time())
			}
		}
	default:
		return fmt.Errorf("pod labels query %s: expected a vector or a matrix, got a %s", query, v.Type())
	}
	return nil
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
