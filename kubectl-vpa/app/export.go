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

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/kubectl-vpa/export"
	"github.com/openvpa/openvpa/kubectl-vpa/replay"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
	"github.com/openvpa/openvpa/pkg/target"
)

// usageKinds are the kinds --all-workloads exports, in output order.
var usageKinds = []string{target.KindDeployment, target.KindStatefulSet, target.KindDaemonSet}

// workloadRef is a workload export reads the usage history of.
type workloadRef struct {
	Kind, Name string
	// Named is true for a KIND/NAME argument, false for one
	// --all-workloads found.
	Named bool
}

// parseExportWorkload parses a KIND/NAME argument of export: a workload
// with a pod template.
func parseExportWorkload(arg string) (kind, name string, err error) {
	kind, name, err = replay.ParseWorkload(arg)
	if err == nil && kind == replay.KindPod {
		err = fmt.Errorf("%s: export writes patches of a workload's pod template; give its Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob", arg)
	}
	return kind, name, err
}

// runExport writes the patches to stdout or o.Dir, warnings to stderr:
// those of the VPAs in names (every VPA in scope when there are none) that
// the selectors select, then those of the workloads no VPA targets, from
// their usage history in Prometheus: the workloads named KIND/NAME in
// names, or with --all-workloads every Deployment, StatefulSet and
// DaemonSet of namespace ns that --target-selector selects. A workload
// named KIND/NAME that a VPA targets is exported from the VPA.
func runExport(ctx context.Context, ix *snapshot.Index, o *Options, ns string, names []string, stdout, stderr io.Writer) error {
	vpas, workloads, err := o.exportScope(ix, ns, names)
	if err != nil {
		return err
	}
	r := export.Compute(ix, vpas, o.Export)
	if len(workloads) > 0 {
		rec, err := replay.NewCommandOptions().Recommender()
		if err != nil {
			return err
		}
		usages, warnings, err := o.readUsage(ctx, ns, workloads, rec.Estimator.Name())
		if err != nil {
			return err
		}
		ru := export.ComputeFromUsage(ix, usages, rec, o.Export)
		r.Patches = append(r.Patches, ru.Patches...)
		r.Warnings = append(append(r.Warnings, warnings...), ru.Warnings...)
	}
	for _, w := range append(ix.Warnings, r.Warnings...) {
		fmt.Fprintln(stderr, "warning:", w)
	}
	wo := export.WriteOptions{Format: o.Export.Format, Value: o.Export.Value, Namespaced: o.AllNamespaces}
	if o.Dir == "" {
		return export.WriteStream(stdout, r.Patches, wo)
	}
	files, err := export.WriteDir(o.Dir, r.Patches, wo)
	for _, f := range files {
		fmt.Fprintln(stdout, filepath.Join(o.Dir, f))
	}
	return err
}

// exportScope returns the VPAs to export and the workloads to export from
// their usage history.
func (o *Options) exportScope(ix *snapshot.Index, ns string, names []string) ([]*vpav1.VerticalPodAutoscaler, []workloadRef, error) {
	selected := o.selected(ix)
	if len(names) == 0 {
		if !o.AllWorkloads {
			return selected, nil, nil
		}
		return selected, o.workloadsWithoutVPA(ix, ns), nil
	}
	byName := map[string]*vpav1.VerticalPodAutoscaler{}
	for _, v := range selected {
		byName[v.Name] = v
	}
	var picked []*vpav1.VerticalPodAutoscaler
	var workloads []workloadRef
	seen := map[string]bool{}
	for _, n := range names {
		if !strings.Contains(n, "/") {
			v := byName[n]
			if v == nil {
				return nil, nil, fmt.Errorf("VerticalPodAutoscaler %q not found in the namespace (or not selected by -l)", n)
			}
			picked = append(picked, v)
			continue
		}
		kind, name, err := parseExportWorkload(n)
		if err != nil {
			return nil, nil, err
		}
		if seen[kind+"/"+name] {
			continue
		}
		seen[kind+"/"+name] = true
		if targeting := vpasTargeting(ix.VPAs, ns, kind, name); len(targeting) > 0 {
			var sel []*vpav1.VerticalPodAutoscaler
			for _, v := range targeting {
				if byName[v.Name] == v {
					sel = append(sel, v)
				}
			}
			if len(sel) == 0 {
				return nil, nil, fmt.Errorf("%s %s/%s has VerticalPodAutoscaler %s, which -l or --target-selector does not select", kind, ns, name, targeting[0].Name)
			}
			picked = append(picked, sel...)
			continue
		}
		if ix.Workload(kind, ns, name) == nil {
			return nil, nil, fmt.Errorf("%s %s/%s not found", kind, ns, name)
		}
		if !o.History.Enabled() {
			return nil, nil, fmt.Errorf("%s %s/%s has no VerticalPodAutoscaler, so no recommendation: give --prometheus-url to export it from its usage history in Prometheus, or create a VPA in mode Off for it", kind, ns, name)
		}
		workloads = append(workloads, workloadRef{Kind: kind, Name: name, Named: true})
	}
	return picked, workloads, nil
}

// vpasTargeting returns the VPAs of namespace ns whose targetRef names the
// workload, sorted by name.
func vpasTargeting(vpas []*vpav1.VerticalPodAutoscaler, ns, kind, name string) []*vpav1.VerticalPodAutoscaler {
	var out []*vpav1.VerticalPodAutoscaler
	for _, v := range vpas {
		if r := v.Spec.TargetRef; v.Namespace == ns && r != nil && r.Kind == kind && r.Name == name {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// workloadsWithoutVPA returns the Deployments, StatefulSets and DaemonSets
// of namespace ns that no VPA targets and --target-selector selects, by
// kind and name.
func (o *Options) workloadsWithoutVPA(ix *snapshot.Index, ns string) []workloadRef {
	var out []workloadRef
	for _, kind := range usageKinds {
		var names []string
		for _, obj := range ix.Snapshot.Workloads {
			w, ok := target.WorkloadOf(obj)
			if !ok || w.Kind != kind || w.Namespace != ns || len(vpasTargeting(ix.VPAs, ns, kind, w.Name)) > 0 {
				continue
			}
			if o.targetSelector != nil && !o.targetSelector.Empty() {
				m, err := meta.Accessor(obj) // WorkloadOf keeps no labels
				if err != nil || !o.targetSelector.Matches(labels.Set(m.GetLabels())) {
					continue
				}
			}
			names = append(names, w.Name)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, workloadRef{Kind: kind, Name: n})
		}
	}
	return out
}

// readUsage reads each workload's usage history from Prometheus. A
// workload --all-workloads found with no usage is left out with a warning;
// one named with no usage, and any failure to read, is an error.
func (o *Options) readUsage(ctx context.Context, ns string, workloads []workloadRef, estimatorName string) ([]export.Usage, []string, error) {
	var usages []export.Usage
	var warnings []string
	for _, w := range workloads {
		src := o.History
		src.Namespace = ns
		src.Workload = strings.ToLower(w.Kind) + "/" + w.Name
		tr, st, err := src.Load(ctx)
		if errors.Is(err, replay.ErrNoUsage) && !w.Named {
			warnings = append(warnings, fmt.Sprintf("%s %s/%s: no VerticalPodAutoscaler and no usage in Prometheus from %s to %s; skipped",
				w.Kind, ns, w.Name, st.Start.Format(time.RFC3339), st.End.Format(time.RFC3339)))
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s/%s: %w", w.Kind, ns, w.Name, err)
		}
		usages = append(usages, export.Usage{Kind: w.Kind, Namespace: ns, Name: w.Name, History: tr.Workloads[0],
			Source: "usage history in Prometheus",
			Notes: []string{fmt.Sprintf("no VerticalPodAutoscaler: what the recommender's %s estimator (default flags) recommends after the usage of %s from %s to %s (--history-resolution %s)",
				estimatorName, plural(st.Pods, "pod"), st.Start.Format(time.RFC3339), st.End.Format(time.RFC3339), o.History.Flags.HistoryResolution)},
		})
	}
	return usages, warnings, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
