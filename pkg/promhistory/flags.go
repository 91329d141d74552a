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
	"os"

	"github.com/spf13/pflag"
)

// Flags are the history flags as given (durations in Prometheus's syntax),
// shared by the recommender (--storage=prometheus) and `kubectl vpa
// replay`, so that both read the same series with the same settings.
type Flags struct {
	Address                 string
	Insecure                bool
	CadvisorJobName         string
	HistoryLength           string
	HistoryResolution       string
	CPUMetric               string
	MemoryMetric            string
	QueryTimeout            string
	PodLabelPrefix          string
	MetricForPodLabels      string
	PodNamespaceLabel       string
	PodNameLabel            string
	ContainerNamespaceLabel string
	ContainerPodNameLabel   string
	ContainerNameLabel      string
	Username                string
	Password                string
	BearerToken             string
	BearerTokenFile         string
}

// DefaultFlags returns upstream's defaults; the basic-auth credentials come
// from PROMETHEUS_USERNAME and PROMETHEUS_PASSWORD.
func DefaultFlags() Flags {
	return Flags{
		Address:                 "http://prometheus.monitoring.svc",
		CadvisorJobName:         "kubernetes-cadvisor",
		HistoryLength:           "8d",
		HistoryResolution:       "1h",
		CPUMetric:               "container_cpu_usage_seconds_total",
		MemoryMetric:            "container_memory_working_set_bytes",
		QueryTimeout:            "5m",
		PodLabelPrefix:          "pod_label_",
		MetricForPodLabels:      `up{job="kubernetes-pods"}`,
		PodNamespaceLabel:       "kubernetes_namespace",
		PodNameLabel:            "kubernetes_pod_name",
		ContainerNamespaceLabel: "namespace",
		ContainerPodNameLabel:   "pod_name",
		ContainerNameLabel:      "name",
		Username:                os.Getenv("PROMETHEUS_USERNAME"),
		Password:                os.Getenv("PROMETHEUS_PASSWORD"),
	}
}

// AddFlags registers the flags on fs, the server's address under
// addressFlag (the recommender's is prometheus-address).
func (f *Flags) AddFlags(fs *pflag.FlagSet, addressFlag string) {
	fs.StringVar(&f.Address, addressFlag, f.Address, "Where to reach for Prometheus metrics")
	fs.BoolVar(&f.Insecure, "prometheus-insecure", f.Insecure, "Skip tls verify if https is used in the "+addressFlag)
	fs.StringVar(&f.CadvisorJobName, "prometheus-cadvisor-job-name", f.CadvisorJobName, "Name of the prometheus job name which scrapes the cAdvisor metrics")
	fs.StringVar(&f.HistoryLength, "history-length", f.HistoryLength, "How much time back prometheus have to be queried to get historical metrics")
	fs.StringVar(&f.HistoryResolution, "history-resolution", f.HistoryResolution, "Resolution at which Prometheus is queried for historical metrics")
	fs.StringVar(&f.QueryTimeout, "prometheus-query-timeout", f.QueryTimeout, "How long to wait before killing long queries")
	fs.StringVar(&f.CPUMetric, "history-cpu-metric", f.CPUMetric, "Prometheus metric used for CPU usage")
	fs.StringVar(&f.MemoryMetric, "history-memory-metric", f.MemoryMetric, "Prometheus metric used for memory usage")
	fs.StringVar(&f.PodLabelPrefix, "pod-label-prefix", f.PodLabelPrefix, "Which prefix to look for pod labels in metrics")
	fs.StringVar(&f.MetricForPodLabels, "metric-for-pod-labels", f.MetricForPodLabels, "Which metric to look for pod labels in metrics; a range selector (e.g. up{job=\"kubernetes-pods\"}[8d]) also finds pods that are gone")
	fs.StringVar(&f.PodNamespaceLabel, "pod-namespace-label", f.PodNamespaceLabel, "Label name to look for pod namespaces")
	fs.StringVar(&f.PodNameLabel, "pod-name-label", f.PodNameLabel, "Label name to look for pod names")
	fs.StringVar(&f.ContainerNamespaceLabel, "container-namespace-label", f.ContainerNamespaceLabel, "Label name to look for container namespaces")
	fs.StringVar(&f.ContainerPodNameLabel, "container-pod-name-label", f.ContainerPodNameLabel, "Label name to look for container pod names")
	fs.StringVar(&f.ContainerNameLabel, "container-name-label", f.ContainerNameLabel, "Label name to look for container names")
	fs.StringVar(&f.Username, "username", f.Username, "The username used in the prometheus server basic auth. Can also be set via the PROMETHEUS_USERNAME environment variable")
	fs.StringVar(&f.Password, "password", f.Password, "The password used in the prometheus server basic auth. Can also be set via the PROMETHEUS_PASSWORD environment variable")
	fs.StringVar(&f.BearerToken, "prometheus-bearer-token", f.BearerToken, "The bearer token used in the Prometheus server bearer token auth")
	fs.StringVar(&f.BearerTokenFile, "prometheus-bearer-token-file", f.BearerTokenFile, "Path to the bearer token file used for authentication by the Prometheus server")
}

// Config parses the durations and returns the configuration, validated;
// addressFlag names the address's flag in errors.
func (f Flags) Config(addressFlag string) (Config, error) {
	var errs []error
	length, err := ParseDuration("--history-length", f.HistoryLength)
	errs = append(errs, err)
	resolution, err := ParseDuration("--history-resolution", f.HistoryResolution)
	errs = append(errs, err)
	timeout, err := ParseDuration("--prometheus-query-timeout", f.QueryTimeout)
	errs = append(errs, err)
	c := Config{
		Address:                 f.Address,
		AddressFlag:             "--" + addressFlag,
		Insecure:                f.Insecure,
		CadvisorJobName:         f.CadvisorJobName,
		Length:                  length,
		Resolution:              resolution,
		CPUMetric:               f.CPUMetric,
		MemoryMetric:            f.MemoryMetric,
		QueryTimeout:            timeout,
		PodLabelsMetric:         f.MetricForPodLabels,
		PodLabelPrefix:          f.PodLabelPrefix,
		PodNamespaceLabel:       f.PodNamespaceLabel,
		PodNameLabel:            f.PodNameLabel,
		ContainerNamespaceLabel: f.ContainerNamespaceLabel,
		ContainerPodNameLabel:   f.ContainerPodNameLabel,
		ContainerNameLabel:      f.ContainerNameLabel,
		Username:                f.Username,
		Password:                f.Password,
		BearerToken:             f.BearerToken,
		BearerTokenFile:         f.BearerTokenFile,
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	return c, c.Validate()
}
