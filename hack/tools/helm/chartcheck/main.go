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

// Command chartcheck checks that the Helm chart under deploy/charts installs
// what deploy/ (the kustomization) installs: rendered with the values that
// configure it as deploy/ is, its ServiceAccounts, RBAC, Deployments,
// Service, disruption budgets and CRDs equal deploy/'s, object for object
// (labels aside: the chart adds its own). It renders the chart in process
// with Helm's engine and reads the kustomization's resource lists itself, so
// it needs neither a cluster nor kubectl. deploy/ leaves the Lease namespace
// flags at their default (kube-system, or $NAMESPACE), which the chart sets
// explicitly: an argument naming the namespace deploy/ installs into in one
// of those flags counts as absent.
//
// It then checks the chart on its own (checks.go): rendered into another
// namespace, every namespaced object and every namespace flag is there and
// nothing names kube-system; values written with upstream's keys render the
// golden file testdata/upstream-values.golden.yaml; an unknown key is refused
// with a message that names it. And its monitoring kit (monitoring.go):
// nothing of it with the defaults; with it on, the alerts and the dashboard
// of deploy/components/monitoring, and monitors that scrape every component.
//
//	go run ./chartcheck -repo ../../.. [-values FILE]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

// compared are the kinds both must install alike, with the fields compared.
var compared = map[string][]string{
	"ServiceAccount":           nil,
	"ClusterRole":              {"rules", "aggregationRule"},
	"ClusterRoleBinding":       {"roleRef", "subjects"},
	"Role":                     {"rules"},
	"RoleBinding":              {"roleRef", "subjects"},
	"Deployment":               {"spec"},
	"Service":                  {"spec"},
	"PodDisruptionBudget":      {"spec"},
	"CustomResourceDefinition": {"spec"},
	// deploy/ ships the registration the admission controller makes at run
	// time; a chart configured as deploy/ lets the controller make it (see
	// registeredAtRuntime).
	"MutatingWebhookConfiguration": {"webhooks"},
}

type object map[string]any

func (o object) key() string {
	meta, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v/%v", o["kind"], meta["namespace"], meta["name"])
}

func main() {
	repo := flag.String("repo", ".", "the repository's top folder")
	values := flag.String("values", "", "values that configure the chart as deploy/ is (default hack/tools/helm/chartcheck/as-deploy.yaml)")
	namespace := flag.String("namespace", "kube-system", "the namespace deploy/ installs into")
	flag.Parse()
	if *values == "" {
		*values = filepath.Join(*repo, "hack", "tools", "helm", "chartcheck", "as-deploy.yaml")
	}
	if err := run(*repo, *values, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "chartcheck:", err)
		os.Exit(1)
	}
	fmt.Println("chartcheck: deploy/charts/vertical-pod-autoscaler installs what deploy/ installs")
	if err := checkChart(*repo); err != nil {
		fmt.Fprintln(os.Stderr, "chartcheck:", err)
		os.Exit(1)
	}
	fmt.Println("chartcheck: the chart follows its namespace, takes upstream's keys, refuses unknown ones and renders the monitoring kit")
}

func run(repo, valuesFile, namespace string) error {
	chartObjs, err := renderChart(chartDir(repo), valuesFile, namespace)
	if err != nil {
		return err
	}
	dropDefaultNamespaceFlags(chartObjs, namespace)
	deployObjs, err := readKustomization(filepath.Join(repo, "deploy"))
	if err != nil {
		return err
	}
	return compare(chartObjs, deployObjs)
}

func chartDir(repo string) string {
	return filepath.Join(repo, "deploy", "charts", "vertical-pod-autoscaler")
}

// namespaceFlags are the flags that name a namespace and default to
// kube-system (or $NAMESPACE, kube-system in deploy/).
var namespaceFlags = []string{"leader-elect-resource-namespace", "admission-controller-status-lease-namespace", "status-lease-namespace"}

// dropDefaultNamespaceFlags removes from the Deployments' container
// arguments the namespace flags set to namespace, deploy/'s default.
func dropDefaultNamespaceFlags(objs map[string]object, namespace string) {
	for _, o := range objs {
		if o["kind"] != "Deployment" {
			continue
		}
		for _, c := range containers(o) {
			args, _ := c["args"].([]any)
			kept := []any{}
			for _, a := range args {
				drop := false
				for _, f := range namespaceFlags {
					drop = drop || a == "--"+f+"="+namespace
				}
				if !drop {
					kept = append(kept, a)
				}
			}
			c["args"] = kept
		}
	}
}

// registeredAtRuntime tells whether the chart's admission controller
// registers its webhook itself (it runs without --register-webhook=false):
// its Deployment, which compare checks against deploy/'s, then makes the
// registration deploy/ ships.
func registeredAtRuntime(chartObjs map[string]object) bool {
	for _, o := range chartObjs {
		meta, _ := o["metadata"].(map[string]any)
		if o["kind"] != "Deployment" || meta["name"] != "vpa-admission-controller" {
			continue
		}
		for _, c := range containers(o) {
			args, _ := c["args"].([]any)
			for _, a := range args {
				if a == "--register-webhook=false" {
					return false
				}
			}
		}
		return true
	}
	return false
}

// containers returns a Deployment's containers, to change in place.
func containers(o object) []map[string]any {
	spec, _ := o["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	list, _ := pod["containers"].([]any)
	var out []map[string]any
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// renderChart renders the chart as `helm template --namespace` would,
// without a cluster.
func renderChart(dir, valuesFile, namespace string) (map[string]object, error) {
	vals, err := chartutil.ReadValuesFile(valuesFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", valuesFile, err)
	}
	files, err := renderFiles(dir, vals, namespace)
	if err != nil {
		return nil, err
	}
	out := map[string]object{}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		if err := addDocuments(out, files[n], n); err != nil {
			return nil, err
		}
	}
	for k, o := range out {
		meta, _ := o["metadata"].(map[string]any)
		if ann, _ := meta["annotations"].(map[string]any); ann["helm.sh/hook"] != nil {
			delete(out, k) // `helm test` objects: not installed
		}
	}
	return out, nil
}

// renderFiles renders the chart's templates as `helm template` would (the
// values checked against values.schema.json first), by file name.
func renderFiles(dir string, vals chartutil.Values, namespace string) (map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, chartutil.ReleaseOptions{Name: "vpa", Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	return files, nil
}

// readKustomization reads the objects a kustomization lists, following its
// folders. It refuses anything but plain resource lists (patches,
// generators...), which it cannot apply: the check would be wrong.
func readKustomization(dir string) (map[string]object, error) {
	out := map[string]object{}
	var walk func(dir string) error
	walk = func(dir string) error {
		var k map[string]any
		var raw []byte
		var err error
		for _, name := range []string{"kustomization.yaml", "Kustomization"} {
			if raw, err = os.ReadFile(filepath.Join(dir, name)); err == nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("no kustomization in %s: %w", dir, err)
		}
		if err := yaml.Unmarshal(raw, &k); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		for field := range k {
			if field != "apiVersion" && field != "kind" && field != "resources" {
				return fmt.Errorf("%s: the kustomization uses %q, which chartcheck does not apply", dir, field)
			}
		}
		resources, _ := k["resources"].([]any)
		for _, r := range resources {
			p := filepath.Join(dir, fmt.Sprint(r))
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			if st.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := addDocuments(out, string(data), p); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(dir)
}

func addDocuments(out map[string]object, text, source string) error {
	for _, doc := range strings.Split("\n"+text, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		if len(o) == 0 {
			continue
		}
		if _, dup := out[o.key()]; dup {
			return fmt.Errorf("%s: %s twice", source, o.key())
		}
		out[o.key()] = o
	}
	return nil
}

func compare(chartObjs, deployObjs map[string]object) error {
	var errs []error
	keys := make([]string, 0, len(deployObjs))
	for k := range deployObjs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := deployObjs[k]
		fields, ok := compared[fmt.Sprint(d["kind"])]
		if !ok {
			errs = append(errs, fmt.Errorf("deploy/ has %s, a kind chartcheck does not compare", k))
			continue
		}
		c, ok := chartObjs[k]
		if !ok && d["kind"] == "MutatingWebhookConfiguration" && registeredAtRuntime(chartObjs) {
			continue
		}
		if !ok {
			errs = append(errs, fmt.Errorf("the chart does not install %s", k))
			continue
		}
		if c["apiVersion"] != d["apiVersion"] {
			errs = append(errs, fmt.Errorf("%s: apiVersion %v in the chart, %v in deploy/", k, c["apiVersion"], d["apiVersion"]))
		}
		for _, f := range fields {
			if !reflect.DeepEqual(c[f], d[f]) {
				cy, _ := yaml.Marshal(c[f])
				dy, _ := yaml.Marshal(d[f])
				errs = append(errs, fmt.Errorf("%s: %s differs\nchart:\n%s\ndeploy/:\n%s", k, f, cy, dy))
			}
		}
	}
	for k, c := range chartObjs {
		if _, ok := compared[fmt.Sprint(c["kind"])]; ok {
			if _, inDeploy := deployObjs[k]; !inDeploy {
				errs = append(errs, fmt.Errorf("the chart installs %s, which deploy/ does not", k))
			}
		}
	}
	return errors.Join(errs...)
}
