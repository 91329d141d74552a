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

package promhistory

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	prommodel "github.com/prometheus/common/model"
	"k8s.io/klog/v2"
)

// Metrics are the client's Prometheus metrics.
type Metrics struct {
	// Requests and Duration are upstream's
	// vpa_recommender_prometheus_client_api_requests_{count,duration_seconds}.
	Requests *prometheus.CounterVec
	Duration *prometheus.HistogramVec
	// Splits counts range queries split because Prometheus refused them.
	Splits prometheus.Counter
}

// NewMetrics registers the client's metrics on reg (nil: not registered).
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

// Point is one value of a container series.
type Point struct {
	// Pod and Container name the series (the container labels of Config).
	Pod, Container string
	Time           time.Time
	// Value is the query's value: cores for CPUQuery, bytes for MemoryQuery.
	Value float64
}

// Client runs the history queries of a Config against one Prometheus.
type Client struct {
	cfg     Config
	api     promv1.API
	metrics *Metrics
	// Queries counts the queries run, Samples the points read.
	Queries, Samples int
}

// NewClient returns a client for cfg, which it validates. metrics may be nil.
func NewClient(cfg Config, metrics *Metrics) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
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
	return &Client{cfg: cfg, api: promv1.NewAPI(client), metrics: metrics}, nil
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.cfg }

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

// ErrTooManySamples is returned (wrapped) when reading would pass
// Config.MaxSamples.
var ErrTooManySamples = errors.New("too many samples")

// Range runs query over [start, end] at a step of the resolution and hands
// each point to add, each series' points in time order. The range is cut
// into chunks of at most MaxPointsPerSeries steps, oldest first; a chunk
// that Prometheus refuses as too large is split in two halves, down to one
// step. Negative and NaN values are not usage and are skipped.
func (c *Client) Range(ctx context.Context, query string, start, end time.Time, add func(Point)) error {
	step := c.cfg.Resolution
	chunk := time.Duration(c.cfg.maxPoints()-1) * step
	for from := start; !from.After(end); from = from.Add(chunk + step) {
		to := from.Add(chunk)
		if to.After(end) {
			to = end
		}
		if err := c.rangeQuery(ctx, query, from, to, add); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) rangeQuery(ctx context.Context, query string, from, to time.Time, add func(Point)) error {
	qctx, cancel := context.WithTimeout(ctx, c.cfg.QueryTimeout)
	defer cancel()
	c.Queries++
	v, warnings, err := c.api.QueryRange(qctx, query, promv1.Range{Start: from, End: to, Step: c.cfg.Resolution}, promv1.WithTimeout(c.cfg.QueryTimeout))
	if err != nil {
		steps := int(to.Sub(from) / c.cfg.Resolution)
		if tooLarge(err) && steps >= 1 {
			c.metrics.Splits.Inc()
			mid := from.Add(time.Duration(steps/2) * c.cfg.Resolution)
			klog.FromContext(ctx).V(2).Info("Prometheus refused a history query as too large; splitting it",
				"from", from, "to", to, "err", err.Error())
			if err := c.rangeQuery(ctx, query, from, mid, add); err != nil {
				return err
			}
			return c.rangeQuery(ctx, query, mid.Add(c.cfg.Resolution), to, add)
		}
		return c.queryError(qctx, err, query, fmt.Sprintf(" from %s to %s", from.Format(time.RFC3339), to.Format(time.RFC3339)))
	}
	if len(warnings) > 0 {
		klog.FromContext(ctx).Info("Prometheus warned about a history query", "query", query, "warnings", warnings)
	}
	m, ok := v.(prommodel.Matrix)
	if !ok {
		return fmt.Errorf("history query %s: expected a matrix, got a %s", query, v.Type())
	}
	n := 0
	for _, s := range m {
		n += len(s.Values)
	}
	if err := c.count(n); err != nil {
		return err
	}
	podLabel, ctrLabel := prommodel.LabelName(c.cfg.ContainerPodNameLabel), prommodel.LabelName(c.cfg.ContainerNameLabel)
	for _, s := range m {
		pod, ctr := string(s.Metric[podLabel]), string(s.Metric[ctrLabel])
		if pod == "" || ctr == "" {
			continue // excluded by the selector; a server that ignores matchers
		}
		for _, pt := range s.Values {
			val := float64(pt.Value)
			if val < 0 || val != val { // negative or NaN: not a usage
				continue
			}
			add(Point{Pod: pod, Container: ctr, Time: pt.Timestamp.Time(), Value: val})
		}
	}
	return nil
}

// count adds n points read, failing past MaxSamples.
func (c *Client) count(n int) error {
	c.Samples += n
	if c.cfg.MaxSamples > 0 && c.Samples > c.cfg.MaxSamples {
		return fmt.Errorf("%w: the history read from %s passed %d points; read less (a shorter history length, a coarser resolution, fewer pods) or allow more",
			ErrTooManySamples, c.cfg.Address, c.cfg.MaxSamples)
	}
	return nil
}

// queryError says which server and query failed, and whether the query
// timed out or the server could not be reached.
func (c *Client) queryError(qctx context.Context, err error, query, what string) error {
	hint := ""
	var perr *promv1.Error
	switch {
	case errors.Is(qctx.Err(), context.DeadlineExceeded):
		hint = fmt.Sprintf(" (no answer within the query timeout %s)", prommodel.Duration(c.cfg.QueryTimeout))
	case errors.As(err, &perr):
	default:
		hint = " (is Prometheus running and reachable at that address?)"
	}
	return fmt.Errorf("querying Prometheus at %s for %s%s%s: %w", c.cfg.Address, query, what, hint, err)
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

// Labels reads the pods' labels in a namespace at the instant at, and
// hands each pod's labels (PodLabelPrefix stripped) to set with the time
// of the point they come from. The query gives a vector: the pods seen in
// the last five minutes for an instant selector, or in the whole range for
// a range selector (see LabelsQuery). A matrix (from a server that
// evaluates the range selector as such) counts each series' latest point.
func (c *Client) Labels(ctx context.Context, namespace string, at time.Time, set func(pod string, labels map[string]string, t time.Time)) error {
	qctx, cancel := context.WithTimeout(ctx, c.cfg.QueryTimeout)
	defer cancel()
	query := c.cfg.LabelsQuery(namespace)
	c.Queries++
	v, _, err := c.api.Query(qctx, query, at, promv1.WithTimeout(c.cfg.QueryTimeout))
	if err != nil {
		return c.queryError(qctx, err, "pod labels ("+query+")", "")
	}
	each := func(metric prommodel.Metric, t time.Time) {
		name := string(metric[prommodel.LabelName(c.cfg.PodNameLabel)])
		if name == "" {
			return
		}
		labels := map[string]string{}
		for k, v := range metric {
			if l, ok := strings.CutPrefix(string(k), c.cfg.PodLabelPrefix); ok && l != "" {
				labels[l] = string(v)
			}
		}
		set(name, labels, t)
	}
	switch v := v.(type) {
	case prommodel.Vector:
		if err := c.count(len(v)); err != nil {
			return err
		}
		for _, s := range v {
			each(s.Metric, s.Timestamp.Time())
		}
	case prommodel.Matrix:
		if err := c.count(len(v)); err != nil {
			return err
		}
		for _, s := range v {
			if len(s.Values) > 0 {
				each(s.Metric, s.Values[len(s.Values)-1].Timestamp.Time())
			}
		}
	default:
		return fmt.Errorf("pod labels query %s: expected a vector or a matrix, got a %s", query, v.Type())
	}
	return nil
}
