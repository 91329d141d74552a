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

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// monitoringKinds are the kinds of the monitoring kit; monitoringObjects
// also counts the metrics Services and the dashboard ConfigMap.
var monitoringKinds = map[string]bool{"ServiceMonitor": true, "PodMonitor": true, "PrometheusRule": true}

// monitoringValues turns the whole monitoring kit on.
func monitoringValues(monitorNamespace string) chartutil.Values {
	return chartutil.Values{
		"serviceMonitor":   map[string]any{"enabled": true, "namespace": monitorNamespace},
		"podMonitor":       map[string]any{"enabled": true, "namespace": monitorNamespace},
		"prometheusRule":   map[string]any{"enabled": true},
		"grafanaDashboard": map[string]any{"enabled": true},
	}
}

// checkMonitoring checks the chart's monitoring kit against
// deploy/components/monitoring.
func checkMonitoring(repo string) error {
	return checkMonitoringOf(chartDir(repo), filepath.Join(repo, "deploy", "components", "monitoring"))
}

// checkMonitoringOf: with the defaults the chart renders nothing of the
// monitoring kit; with all of it on, the PrometheusRule's groups are
// rules.yaml's, the dashboard ConfigMap holds dashboard.json, and the
// ServiceMonitor and PodMonitor (in the release's namespace or another)
// scrape the prometheus port of every component and nothing else.
func checkMonitoringOf(chart, kit string) error {
	const ns = otherNamespace
	defaults, err := renderObjects(chart, chartutil.Values{}, ns)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range sortedObjectKeys(defaults) {
		if isMonitoring(defaults[k]) {
			errs = append(errs, fmt.Errorf("with the default values the chart renders %s", k))
		}
	}
	for _, monitorNS := range []string{"", "monitoring"} {
		objs, err := renderObjects(chart, monitoringValues(monitorNS), ns)
		if err != nil {
			return err
		}
		if monitorNS == "" {
			monitorNS = ns
		}
		errs = append(errs,
			checkRules(objs, filepath.Join(kit, "rules.yaml"), ns),
			checkDashboard(objs, filepath.Join(kit, "dashboard.json"), ns),
			checkServiceMonitor(objs, ns, monitorNS),
			checkPodMonitor(objs, ns, monitorNS),
		)
	}
	return errors.Join(errs...)
}

// renderObjects renders the chart and returns its objects by key.
func renderObjects(chart string, vals chartutil.Values, namespace string) (map[string]object, error) {
	files, err := renderFiles(chart, vals, namespace)
	if err != nil {
		return nil, err
	}
	out := map[string]object{}
	for _, name := range sortedKeys(files) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		if err := addDocuments(out, files[name], name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func isMonitoring(o object) bool {
	meta, _ := o["metadata"].(map[string]any)
	name := fmt.Sprint(meta["name"])
	switch o["kind"] {
	case "Service":
		return strings.HasSuffix(name, "-metrics")
	case "ConfigMap":
		return name == "openvpa-dashboard"
	}
	return monitoringKinds[fmt.Sprint(o["kind"])]
}

func checkRules(objs map[string]object, rulesFile, ns string) error {
	rule, ok := objs["PrometheusRule "+ns+"/openvpa"]
	if !ok {
		return fmt.Errorf("with prometheusRule.enabled the chart renders no PrometheusRule %s/openvpa", ns)
	}
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		return err
	}
	var want map[string]any
	if err := yaml.Unmarshal(raw, &want); err != nil {
		return fmt.Errorf("%s: %w", rulesFile, err)
	}
	spec, _ := rule["spec"].(map[string]any)
	if !reflect.DeepEqual(spec["groups"], want["groups"]) {
		return fmt.Errorf("the PrometheusRule's groups differ from %s; run hack/update-chart.sh", rulesFile)
	}
	if len(spec) != 1 {
		return fmt.Errorf("the PrometheusRule's spec has more than groups")
	}
	return nil
}

func checkDashboard(objs map[string]object, dashboardFile, ns string) error {
	cm, ok := objs["ConfigMap "+ns+"/openvpa-dashboard"]
	if !ok {
		return fmt.Errorf("with grafanaDashboard.enabled the chart renders no ConfigMap %s/openvpa-dashboard", ns)
	}
	meta, _ := cm["metadata"].(map[string]any)
	if labels, _ := meta["labels"].(map[string]any); labels["grafana_dashboard"] != "1" {
		return fmt.Errorf("the dashboard ConfigMap lacks the label grafana_dashboard: \"1\": %v", labels)
	}
	data, _ := cm["data"].(map[string]any)
	if len(data) != 1 {
		return fmt.Errorf("the dashboard ConfigMap holds %d entries, want 1", len(data))
	}
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		return err
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		return fmt.Errorf("%s: %w", dashboardFile, err)
	}
	for name, text := range data {
		if err := json.Unmarshal([]byte(fmt.Sprint(text)), &got); err != nil {
			return fmt.Errorf("the dashboard ConfigMap's %s is not JSON: %w", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("the dashboard ConfigMap's %s differs from %s; run hack/update-chart.sh", name, dashboardFile)
		}
	}
	return nil
}

// components are the Deployments whose metrics must be scraped, with the
// name of their metrics Service.
var components = map[string]string{
	"vpa-recommender":          "vpa-recommender-metrics",
	"vpa-updater":              "vpa-updater-metrics",
	"vpa-admission-controller": "vpa-admission-controller-metrics",
}

// checkServiceMonitor: the ServiceMonitor in monitorNS selects exactly the
// metrics Services in ns, each of which selects its component's pods and
// sends its scraped port to their prometheus container port.
func checkServiceMonitor(objs map[string]object, ns, monitorNS string) error {
	sm, ok := objs["ServiceMonitor "+monitorNS+"/openvpa"]
	if !ok {
		return fmt.Errorf("with serviceMonitor.enabled the chart renders no ServiceMonitor %s/openvpa", monitorNS)
	}
	spec, _ := sm["spec"].(map[string]any)
	port, err := endpointPort(spec, "endpoints")
	if err != nil {
		return fmt.Errorf("ServiceMonitor %s/openvpa: %w", monitorNS, err)
	}
	var errs []error
	selected := map[string]bool{}
	for _, k := range sortedObjectKeys(objs) {
		o := objs[k]
		if o["kind"] != "Service" {
			continue
		}
		meta, _ := o["metadata"].(map[string]any)
		if selects(spec, monitorNS, meta) {
			selected[fmt.Sprint(meta["name"])] = true
		}
	}
	for deployment, service := range components {
		if !selected[service] {
			errs = append(errs, fmt.Errorf("the ServiceMonitor in %s does not select Service %s/%s", monitorNS, ns, service))
			continue
		}
		delete(selected, service)
		svc := objs["Service "+ns+"/"+service]
		svcSpec, _ := svc["spec"].(map[string]any)
		target := ""
		ports, _ := svcSpec["ports"].([]any)
		for _, p := range ports {
			if m, _ := p.(map[string]any); m["name"] == port {
				target = fmt.Sprint(m["targetPort"])
			}
		}
		if target == "" {
			errs = append(errs, fmt.Errorf("Service %s/%s has no port %q, which the ServiceMonitor scrapes", ns, service, port))
			continue
		}
		pod, err := podOf(objs, ns, deployment)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sel, _ := svcSpec["selector"].(map[string]any)
		if !matchLabels(sel, pod.labels) {
			errs = append(errs, fmt.Errorf("Service %s/%s does not select the pods of Deployment %s", ns, service, deployment))
		}
		if !pod.ports[target] {
			errs = append(errs, fmt.Errorf("Service %s/%s targets port %s, which Deployment %s's containers lack", ns, service, target, deployment))
		}
	}
	for name := range selected {
		errs = append(errs, fmt.Errorf("the ServiceMonitor in %s selects Service %s/%s too", monitorNS, ns, name))
	}
	return errors.Join(errs...)
}

// checkPodMonitor: the PodMonitor in monitorNS selects the pods of the
// three Deployments in ns, and they have the port it scrapes.
func checkPodMonitor(objs map[string]object, ns, monitorNS string) error {
	pm, ok := objs["PodMonitor "+monitorNS+"/openvpa"]
	if !ok {
		return fmt.Errorf("with podMonitor.enabled the chart renders no PodMonitor %s/openvpa", monitorNS)
	}
	spec, _ := pm["spec"].(map[string]any)
	port, err := endpointPort(spec, "podMetricsEndpoints")
	if err != nil {
		return fmt.Errorf("PodMonitor %s/openvpa: %w", monitorNS, err)
	}
	var errs []error
	for deployment := range components {
		pod, err := podOf(objs, ns, deployment)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !selects(spec, monitorNS, map[string]any{"namespace": ns, "labels": toAnyMap(pod.labels)}) {
			errs = append(errs, fmt.Errorf("the PodMonitor in %s does not select the pods of Deployment %s/%s", monitorNS, ns, deployment))
		}
		if !pod.ports[port] {
			errs = append(errs, fmt.Errorf("the PodMonitor scrapes port %q, which Deployment %s/%s's containers lack", port, ns, deployment))
		}
	}
	return errors.Join(errs...)
}

// endpointPort returns the port of a monitor's only endpoint.
func endpointPort(spec map[string]any, field string) (string, error) {
	endpoints, _ := spec[field].([]any)
	if len(endpoints) != 1 {
		return "", fmt.Errorf("%d %s, want 1", len(endpoints), field)
	}
	e, _ := endpoints[0].(map[string]any)
	port, _ := e["port"].(string)
	if port == "" {
		return "", fmt.Errorf("%s[0] names no port", field)
	}
	return port, nil
}

// selects tells whether a monitor's spec in monitorNS selects an object
// with the given metadata, as the Prometheus Operator does: the monitor's
// own namespace unless namespaceSelector says otherwise, then the label
// selector.
func selects(spec map[string]any, monitorNS string, meta map[string]any) bool {
	namespaces := []any{monitorNS}
	if nsSel, _ := spec["namespaceSelector"].(map[string]any); nsSel != nil {
		if nsSel["any"] == true {
			namespaces = nil
		} else if names, ok := nsSel["matchNames"].([]any); ok {
			namespaces = names
		}
	}
	if namespaces != nil {
		found := false
		for _, n := range namespaces {
			found = found || n == meta["namespace"]
		}
		if !found {
			return false
		}
	}
	labels := map[string]string{}
	if l, _ := meta["labels"].(map[string]any); l != nil {
		for k, v := range l {
			labels[k] = fmt.Sprint(v)
		}
	}
	sel, _ := spec["selector"].(map[string]any)
	if len(sel) == 0 {
		return false // the chart never selects everything
	}
	ml, _ := sel["matchLabels"].(map[string]any)
	if !matchLabels(ml, labels) {
		return false
	}
	exprs, _ := sel["matchExpressions"].([]any)
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		values, _ := m["values"].([]any)
		v, has := labels[fmt.Sprint(m["key"])]
		in := false
		for _, x := range values {
			in = in || (has && fmt.Sprint(x) == v)
		}
		switch m["operator"] {
		case "In":
			if !in {
				return false
			}
		case "NotIn":
			if in {
				return false
			}
		case "Exists":
			if !has {
				return false
			}
		case "DoesNotExist":
			if has {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func matchLabels(sel map[string]any, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

type podTemplate struct {
	labels map[string]string
	ports  map[string]bool // container port names and numbers
}

// podOf returns the labels and container ports of a Deployment's pods.
func podOf(objs map[string]object, ns, deployment string) (podTemplate, error) {
	d, ok := objs["Deployment "+ns+"/"+deployment]
	if !ok {
		return podTemplate{}, fmt.Errorf("the chart renders no Deployment %s/%s", ns, deployment)
	}
	spec, _ := d["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	out := podTemplate{labels: map[string]string{}, ports: map[string]bool{}}
	if l, _ := meta["labels"].(map[string]any); l != nil {
		for k, v := range l {
			out.labels[k] = fmt.Sprint(v)
		}
	}
	for _, c := range containers(d) {
		ports, _ := c["ports"].([]any)
		for _, p := range ports {
			m, _ := p.(map[string]any)
			if n, ok := m["name"].(string); ok {
				out.ports[n] = true
			}
			out.ports[fmt.Sprint(m["containerPort"])] = true
		}
	}
	return out, nil
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedObjectKeys(m map[string]object) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
