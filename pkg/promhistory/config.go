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
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	prommodel "github.com/prometheus/common/model"
)

// MaxPointsPerSeries is the most steps one range query asks for: Prometheus
// refuses range queries of more than 11,000 points per series.
const MaxPointsPerSeries = 10000

// Config is what reading history takes; every field has a flag (Flags).
type Config struct {
	// Address is the Prometheus server's base URL.
	Address string
	// AddressFlag names the flag of Address in errors; empty means
	// --prometheus-address, the recommender's.
	AddressFlag string
	// Insecure skips TLS verification of an https Address.
	Insecure bool
	// CadvisorJobName is the job label of the cAdvisor series; empty
	// leaves the job out of the selector.
	CadvisorJobName string
	// Length is how far back history is read, Resolution the step.
	Length, Resolution time.Duration
	// CPUMetric and MemoryMetric are the cAdvisor metric names.
	CPUMetric, MemoryMetric string
	// QueryTimeout bounds each query, on the server and in the client.
	QueryTimeout time.Duration
	// PodLabelsMetric is the selector of the series that carry the pods'
	// labels, each label named PodLabelPrefix + its name; the pod is named
	// by the PodNamespaceLabel and PodNameLabel labels.
	PodLabelsMetric                 string
	PodLabelPrefix                  string
	PodNamespaceLabel, PodNameLabel string
	// Container series labels: namespace, pod and container name.
	ContainerNamespaceLabel, ContainerPodNameLabel, ContainerNameLabel string
	// Basic auth, or a bearer token (inline or read from a file at every
	// request, so a rotated token is picked up).
	Username, Password, BearerToken, BearerTokenFile string
	// MaxPointsPerSeries bounds the steps of one range query; zero means
	// MaxPointsPerSeries.
	MaxPointsPerSeries int
	// MaxSamples bounds the points one Client reads over all its queries,
	// so that a namespace larger than expected ends in an error rather than
	// in the memory it would take; zero means no bound.
	MaxSamples int
}

// ParseDuration parses a Prometheus duration ("8d", "1h", "90s").
func ParseDuration(flag, s string) (time.Duration, error) {
	d, err := prommodel.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s must be positive, got %q", flag, s)
	}
	return time.Duration(d), nil
}

var (
	labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	// selectorShape is a metric name with an optional label matcher list
	// and an optional range: what --metric-for-pod-labels may be.
	selectorShape = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)?(\{[^{}]*\})?(\[[0-9a-z]+\])?$`)
	metricName    = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.Address)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("%s: %w", c.addressFlag(), err))
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		errs = append(errs, fmt.Errorf("%s must be an http or https URL, got %q", c.addressFlag(), c.Address))
	}
	if c.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("the most samples to read must not be negative, got %d", c.MaxSamples))
	}
	if c.Length <= 0 || c.Resolution <= 0 {
		errs = append(errs, errors.New("--history-length and --history-resolution must be positive"))
	} else if c.Resolution > c.Length {
		errs = append(errs, fmt.Errorf("--history-resolution (%v) must not exceed --history-length (%v)", c.Resolution, c.Length))
	}
	if c.QueryTimeout <= 0 {
		errs = append(errs, errors.New("--prometheus-query-timeout must be positive"))
	}
	for flag, v := range map[string]string{"--history-cpu-metric": c.CPUMetric, "--history-memory-metric": c.MemoryMetric} {
		if !metricName.MatchString(v) {
			errs = append(errs, fmt.Errorf("%s must be a metric name, got %q", flag, v))
		}
	}
	for flag, v := range map[string]string{
		"--pod-namespace-label": c.PodNamespaceLabel, "--pod-name-label": c.PodNameLabel,
		"--container-namespace-label": c.ContainerNamespaceLabel, "--container-pod-name-label": c.ContainerPodNameLabel,
		"--container-name-label": c.ContainerNameLabel,
	} {
		if !labelName.MatchString(v) {
			errs = append(errs, fmt.Errorf("%s must be a label name, got %q", flag, v))
		}
	}
	if m := selectorShape.FindStringSubmatch(c.PodLabelsMetric); m == nil || m[1] == "" && m[2] == "" {
		errs = append(errs, fmt.Errorf(`--metric-for-pod-labels must be a series selector such as up{job="kubernetes-pods"}, optionally with a range such as [8d], got %q`, c.PodLabelsMetric))
	}
	auth := 0
	for _, set := range []bool{c.Username != "" || c.Password != "", c.BearerToken != "", c.BearerTokenFile != ""} {
		if set {
			auth++
		}
	}
	if auth > 1 {
		errs = append(errs, errors.New("--username/--password, --prometheus-bearer-token and --prometheus-bearer-token-file are mutually exclusive"))
	}
	return errors.Join(errs...)
}

func (c Config) addressFlag() string {
	if c.AddressFlag != "" {
		return c.AddressFlag
	}
	return "--prometheus-address"
}

func (c Config) maxPoints() int {
	if c.MaxPointsPerSeries > 0 {
		return c.MaxPointsPerSeries
	}
	return MaxPointsPerSeries
}

// containerSelector is upstream's label matcher list of the cAdvisor series,
// restricted to one namespace and to the pods whose names match podRegex
// (every pod when it is empty).
func (c Config) containerSelector(namespace, podRegex string) string {
	var b strings.Builder
	if c.CadvisorJobName != "" {
		fmt.Fprintf(&b, "job=%s, ", strconv.Quote(c.CadvisorJobName))
	}
	podMatch := ".+"
	if podRegex != "" {
		podMatch = podRegex
	}
	fmt.Fprintf(&b, `%s=~%s, %s!="POD", %s!="", %s=%s`, c.ContainerPodNameLabel, strconv.Quote(podMatch), c.ContainerNameLabel, c.ContainerNameLabel,
		c.ContainerNamespaceLabel, strconv.Quote(namespace))
	return b.String()
}

// CPUQuery is the range query of a namespace's CPU usage in cores.
func (c Config) CPUQuery(namespace string) string { return c.PodsCPUQuery(namespace, "") }

// MemoryQuery is the range query of a namespace's memory usage in bytes.
func (c Config) MemoryQuery(namespace string) string { return c.PodsMemoryQuery(namespace, "") }

// PodsCPUQuery is CPUQuery restricted to the pods whose names match
// podRegex, a fully anchored RE2 expression as Prometheus's =~ takes (every
// pod when it is empty).
func (c Config) PodsCPUQuery(namespace, podRegex string) string {
	return fmt.Sprintf("rate(%s{%s}[%s])", c.CPUMetric, c.containerSelector(namespace, podRegex), prommodel.Duration(c.Resolution))
}

// PodsMemoryQuery is MemoryQuery restricted to the pods whose names match
// podRegex (every pod when it is empty).
func (c Config) PodsMemoryQuery(namespace, podRegex string) string {
	return fmt.Sprintf("%s{%s}", c.MemoryMetric, c.containerSelector(namespace, podRegex))
}

// PodNamesRegex is the expression that matches exactly the given pod names.
func PodNamesRegex(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(quoted, "|")
}

// LabelsQuery is the instant query of a namespace's pod labels: the pod
// labels metric with the namespace matcher added. A metric with a range
// (up{job="kubernetes-pods"}[8d]) is queried as last_over_time over it: the
// labels of every pod seen in the range, one point each, where upstream
// would load every raw sample of the range.
func (c Config) LabelsQuery(namespace string) string {
	sel, rng := c.PodLabelsMetric, ""
	if i := strings.LastIndexByte(sel, '['); i >= 0 {
		sel, rng = sel[:i], sel[i:]
	}
	matcher := c.PodNamespaceLabel + "=" + strconv.Quote(namespace)
	switch {
	case strings.HasSuffix(sel, "{}"):
		sel = strings.TrimSuffix(sel, "}") + matcher + "}"
	case strings.HasSuffix(sel, "}"):
		sel = strings.TrimSuffix(sel, "}") + ", " + matcher + "}"
	default:
		sel += "{" + matcher + "}"
	}
	if rng != "" {
		return "last_over_time(" + sel + rng + ")"
	}
	return sel
}
