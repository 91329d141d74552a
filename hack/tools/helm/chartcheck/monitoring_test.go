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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMonitoringKit(t *testing.T) {
	if err := checkMonitoring(repo); err != nil {
		t.Fatal(err)
	}
}

func TestChartFollowsItsNamespaceWithMonitoring(t *testing.T) {
	if err := checkNamespace(repo, monitoringValues("")); err != nil {
		t.Fatal(err)
	}
}

// TestMonitoringDifferencesAreFound changes a copy of the chart and of the
// kit and expects checkMonitoringOf to report each change.
func TestMonitoringDifferencesAreFound(t *testing.T) {
	const (
		template = "templates/monitoring.yaml"
		values   = "values.yaml"
		rules    = "files/monitoring/rules.yaml"
	)
	cases := map[string]struct {
		chartFile, old, new string
		kitFile             string // a file of the kit to change instead
		want                string
	}{
		"a stale copy of the rules": {chartFile: rules, old: "alert: VPARecommenderLoopStale", new: "alert: VPARecommenderStale",
			want: "the PrometheusRule's groups differ"},
		"a changed dashboard": {kitFile: "dashboard.json", old: `"title": "OpenVPA"`, new: `"title": "VPA"`,
			want: "the dashboard ConfigMap's openvpa.json differs"},
		"a ServiceMonitor that selects nothing": {chartFile: template, old: "      openvpa.io/metrics: \"true\"", new: "      openvpa.io/metrics: \"yes\"",
			want: "does not select Service openvpa-system/vpa-updater-metrics"},
		"a metrics Service on the wrong port": {chartFile: template, old: "targetPort: prometheus", new: "targetPort: webhook",
			want: "Service openvpa-system/vpa-recommender-metrics targets port webhook"},
		"a PodMonitor for the recommender only": {chartFile: template, old: "{{- range $components }}\n      - {{ index . 0 }}", new: "- vpa-recommender\n{{- range list }}\n      - {{ index . 0 }}",
			want: "the PodMonitor in openvpa-system does not select the pods of Deployment openvpa-system/vpa-updater"},
		"alerts on by default": {chartFile: values, old: "prometheusRule:\n  # -- Create a PrometheusRule `openvpa` with the alerts of deploy/components/monitoring/rules.yaml\n  # (runbooks in docs/monitoring.md).\n  enabled: false",
			new:  "prometheusRule:\n  enabled: true",
			want: "with the default values the chart renders PrometheusRule openvpa-system/openvpa"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			chart := filepath.Join(tmp, "chart")
			kit := filepath.Join(tmp, "kit")
			if err := os.CopyFS(chart, os.DirFS(chartDir(repo))); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(kit, os.DirFS(filepath.Join(repo, "deploy", "components", "monitoring"))); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(chart, tc.chartFile)
			if tc.kitFile != "" {
				file = filepath.Join(kit, tc.kitFile)
			}
			replace(t, file, tc.old, tc.new)
			err := checkMonitoringOf(chart, kit)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkMonitoringOf = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// replace replaces old, which must be there, with new in a file.
func replace(t *testing.T, file, old, new string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s lacks %q", file, old)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}
