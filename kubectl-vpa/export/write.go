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

package export

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// KustomizationFile is the name of the Component WriteDir writes.
const KustomizationFile = "kustomization.yaml"

// WriteOptions say how patches are rendered.
type WriteOptions struct {
	// Format is FormatStrategic or FormatJSON6902.
	Format string
	// Value is the exported value, for the comments.
	Value string
	// Namespaced puts the namespace into strategic-merge patches and the
	// Component's targets. Without it a patch matches the workload by kind
	// and name in whatever namespace the overlay puts it, as manifests
	// kept without a namespace need.
	Namespaced bool
}

// WriteStream writes the patches to w as a YAML stream, each document
// preceded by comments naming its VPA and target. Strategic-merge patches
// always carry the namespace, so that each is complete on its own.
func WriteStream(w io.Writer, patches []Patch, o WriteOptions) error {
	o.Namespaced = true
	var b bytes.Buffer
	for _, p := range patches {
		doc, err := render(p, o)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		writeComments(&b, p, o)
		b.Write(doc)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// FileName is the name of p's file in WriteDir's directory:
// namespace.kind.name.yaml, the kind in lower case.
func FileName(p Patch) string {
	return p.Workload.Namespace + "." + strings.ToLower(p.Workload.Kind) + "." + p.Workload.Name + ".yaml"
}

// kustomization is the Component WriteDir writes.
type kustomization struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Patches    []patchEntry `json:"patches"`
}

type patchEntry struct {
	Path   string         `json:"path"`
	Target patchSelection `json:"target"`
}

type patchSelection struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// WriteDir writes each patch to its FileName in dir and a kustomization.yaml
// of kind Component that lists them with their targets, so that an overlay
// that includes the directory under components: renders the workloads with
// the patches applied. It returns the files written, kustomization.yaml
// last. Other files in dir are left alone; kustomization.yaml is replaced.
func WriteDir(dir string, patches []Patch, o WriteOptions) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	k := kustomization{APIVersion: "kustomize.config.k8s.io/v1alpha1", Kind: "Component", Patches: []patchEntry{}}
	var written []string
	for _, p := range patches {
		doc, err := render(p, o)
		if err != nil {
			return written, err
		}
		var b bytes.Buffer
		writeComments(&b, p, o)
		b.Write(doc)
		name := FileName(p)
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			return written, err
		}
		written = append(written, name)
		sel := patchSelection{Group: p.Workload.Group, Version: p.Workload.Version, Kind: p.Workload.Kind, Name: p.Workload.Name}
		if o.Namespaced {
			sel.Namespace = p.Workload.Namespace
		}
		k.Patches = append(k.Patches, patchEntry{Path: name, Target: sel})
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return written, err
	}
	head := "# Written by kubectl vpa export (--format " + o.Format + ", --value " + o.Value + ").\n" +
		"# Include this directory under components: in the kustomization of an overlay\n" +
		"# that has the workloads among its resources.\n"
	if err := os.WriteFile(filepath.Join(dir, KustomizationFile), append([]byte(head), data...), 0o644); err != nil {
		return written, err
	}
	return append(written, KustomizationFile), nil
}

func writeComments(b *bytes.Buffer, p Patch, o WriteOptions) {
	w := p.Workload
	from := "VerticalPodAutoscaler " + p.VPA
	if p.VPA == "" {
		from = p.Source
	}
	fmt.Fprintf(b, "# %s, %s: %s %s %s/%s\n", from, o.Value, w.APIVersion(), w.Kind, w.Namespace, w.Name)
	for _, n := range p.Notes {
		fmt.Fprintf(b, "# %s\n", n)
	}
}

func render(p Patch, o WriteOptions) ([]byte, error) {
	var v any
	if o.Format == FormatJSON6902 {
		v = jsonPatch(p)
	} else {
		v = strategicPatch(p, o.Namespaced)
	}
	return yaml.Marshal(v)
}

// strategicPatch sets each container's requests and limits, merged into
// the template's containers by name.
func strategicPatch(p Patch, namespaced bool) map[string]any {
	meta := map[string]any{"name": p.Workload.Name}
	if namespaced {
		meta["namespace"] = p.Workload.Namespace
	}
	var containers []any
	for _, c := range p.Containers {
		res := map[string]any{"requests": quantities(c.Requests)}
		if len(c.Limits) > 0 {
			res["limits"] = quantities(c.Limits)
		}
		containers = append(containers, map[string]any{"name": c.Name, "resources": res})
	}
	// The pod template's spec, nested along its path.
	var node any = map[string]any{"containers": containers}
	segs := strings.Split(strings.TrimPrefix(p.TemplatePath, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		node = map[string]any{segs[i]: node}
	}
	out := node.(map[string]any)
	out["apiVersion"] = p.Workload.APIVersion()
	out["kind"] = p.Workload.Kind
	out["metadata"] = meta
	return out
}

// op is one JSON patch operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// jsonPatch addresses containers by index, each guarded by a test of the
// container's name, so that a manifest whose containers are in another
// order fails to patch instead of patching the wrong one. Entries are set
// one by one where the live container has the map, and the map (or the
// container's whole resources) is added where it has none.
func jsonPatch(p Patch) []op {
	var ops []op
	for _, c := range p.Containers {
		base := p.TemplatePath + "/containers/" + strconv.Itoa(c.Index)
		ops = append(ops, op{Op: "test", Path: base + "/name", Value: c.Name})
		if !c.HadRequests {
			// No requests: the manifest may have no resources at all, so
			// add them whole (what else they hold, kept).
			r := c.Resources.DeepCopy()
			r.Requests = mergeLists(r.Requests, c.Requests)
			if len(c.Limits) > 0 {
				r.Limits = mergeLists(r.Limits, c.Limits)
			}
			ops = append(ops, op{Op: "add", Path: base + "/resources", Value: resourcesValue(r)})
			continue
		}
		ops = append(ops, entries(base+"/resources/requests", c.Requests)...)
		switch {
		case len(c.Limits) == 0:
		case c.HadLimits:
			ops = append(ops, entries(base+"/resources/limits", c.Limits)...)
		default:
			ops = append(ops, op{Op: "add", Path: base + "/resources/limits", Value: quantities(c.Limits)})
		}
	}
	return ops
}

func entries(path string, l corev1.ResourceList) []op {
	var ops []op
	for _, name := range sortedNames(l) {
		q := l[name]
		ops = append(ops, op{Op: "add", Path: path + "/" + escapePointer(string(name)), Value: q.String()})
	}
	return ops
}

func resourcesValue(r *corev1.ResourceRequirements) map[string]any {
	out := map[string]any{}
	if len(r.Requests) > 0 {
		out["requests"] = quantities(r.Requests)
	}
	if len(r.Limits) > 0 {
		out["limits"] = quantities(r.Limits)
	}
	if len(r.Claims) > 0 {
		out["claims"] = r.Claims
	}
	return out
}

func mergeLists(base, over corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func quantities(l corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(l))
	for name, q := range l {
		out[string(name)] = q.String()
	}
	return out
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
