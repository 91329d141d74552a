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
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// otherNamespace is where checkNamespace renders the chart.
const otherNamespace = "openvpa-system"

// wantNamespaceFlags are, per Deployment, the flags that must name the
// release's namespace.
var wantNamespaceFlags = map[string][]string{
	"vpa-recommender":          {"leader-elect-resource-namespace"},
	"vpa-updater":              {"leader-elect-resource-namespace", "admission-controller-status-lease-namespace"},
	"vpa-admission-controller": {"status-lease-namespace"},
}

// clusterScoped are the kinds the chart renders without a namespace.
var clusterScoped = map[string]bool{
	"ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true, "MutatingWebhookConfiguration": true,
}

// checkChart runs the checks of the chart on its own.
func checkChart(repo string) error {
	return errors.Join(
		checkNamespace(repo, nil),
		checkNamespace(repo, chartutil.Values{"admissionController": map[string]any{"registerWebhook": true, "replicas": 1}}),
		checkNamespace(repo, monitoringValues("")),
		checkUpstreamValues(repo, false),
		checkUnknownKey(repo),
		checkMonitoring(repo),
	)
}

// checkNamespace renders the chart into otherNamespace: every namespaced
// object, ServiceAccount subject and webhook Service is there, every
// namespace flag names it, and kube-system appears nowhere.
func checkNamespace(repo string, vals chartutil.Values) error {
	if vals == nil {
		vals = chartutil.Values{}
	}
	files, err := renderFiles(chartDir(repo), vals, otherNamespace)
	if err != nil {
		return err
	}
	var errs []error
	seen := map[string]bool{}
	for _, name := range sortedKeys(files) {
		text := files[name]
		if strings.Contains(text, "kube-system") {
			errs = append(errs, fmt.Errorf("rendered into %s, %s names kube-system", otherNamespace, name))
		}
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		objs := map[string]object{}
		if err := addDocuments(objs, text, name); err != nil {
			return err
		}
		for _, o := range objs {
			meta, _ := o["metadata"].(map[string]any)
			kind := fmt.Sprint(o["kind"])
			if ns, _ := meta["namespace"].(string); clusterScoped[kind] != (ns == "") || (ns != "" && ns != otherNamespace) {
				errs = append(errs, fmt.Errorf("rendered into %s, %s %v has namespace %q", otherNamespace, kind, meta["name"], ns))
			}
			if kind != "Deployment" {
				continue
			}
			seen[fmt.Sprint(meta["name"])] = true
			for _, c := range containers(o) {
				args := fmt.Sprint(c["args"])
				for _, f := range wantNamespaceFlags[fmt.Sprint(meta["name"])] {
					if !strings.Contains(args, "--"+f+"="+otherNamespace) {
						errs = append(errs, fmt.Errorf("rendered into %s, Deployment %v does not set --%s to it: %s", otherNamespace, meta["name"], f, args))
					}
				}
			}
		}
	}
	for name := range wantNamespaceFlags {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("rendered into %s, the chart has no Deployment %s", otherNamespace, name))
		}
	}
	return errors.Join(errs...)
}

// checkUpstreamValues renders testdata/upstream-values.yaml, values written
// with upstream's keys, and compares the result with the golden file (or,
// with update, writes it).
func checkUpstreamValues(repo string, update bool) error {
	dir := filepath.Join(repo, "hack", "tools", "helm", "chartcheck", "testdata")
	vals, err := chartutil.ReadValuesFile(filepath.Join(dir, "upstream-values.yaml"))
	if err != nil {
		return err
	}
	files, err := renderFiles(chartDir(repo), vals, otherNamespace)
	if err != nil {
		return fmt.Errorf("upstream's keys: %w", err)
	}
	var b bytes.Buffer
	for _, name := range sortedKeys(files) {
		if strings.TrimSpace(files[name]) == "" {
			continue
		}
		fmt.Fprintf(&b, "# Source: %s\n%s\n", name, strings.TrimSpace(files[name]))
	}
	golden := filepath.Join(dir, "upstream-values.golden.yaml")
	if update {
		return os.WriteFile(golden, b.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		return err
	}
	if !bytes.Equal(want, b.Bytes()) {
		return fmt.Errorf("upstream's keys render differently from %s; if the change is meant, run go test ./chartcheck -update", golden)
	}
	return nil
}

// checkUnknownKey: a misspelt key is refused, and the message names it.
func checkUnknownKey(repo string) error {
	var vals chartutil.Values
	if err := yaml.Unmarshal([]byte("recommender:\n  replica: 3\n"), &vals); err != nil {
		return err
	}
	_, err := renderFiles(chartDir(repo), vals, otherNamespace)
	if err == nil || !strings.Contains(err.Error(), "replica") || !strings.Contains(err.Error(), "recommender") {
		return fmt.Errorf("recommender.replica (unknown) rendered with %v; want an error naming it", err)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
