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

// Command chartdocs generates the Helm chart's values.schema.json and
// README.md from its values.yaml, whose comments document every key, and
// with -check fails when the files on disk differ from what it would write.
//
//	go run ./chartdocs -chart ../../../deploy/charts/vertical-pod-autoscaler [-check]
//
// Comment conventions, in the comment block right above a key:
//
//	# -- Description (its first line starts with "-- "; the following lines continue it).
//	# @type: string,null    JSON schema type(s), when the default does not show them
//	# @enum: A,B            the values allowed
//	# @open                 a map whose keys are free (a Kubernetes object such as affinity)
//
// A map with keys in values.yaml accepts only those keys (additionalProperties:
// false), so a misspelt or unknown key fails `helm install` and `helm
// template`; a map without keys, or marked @open, accepts any.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"
)

func main() {
	chart := flag.String("chart", "deploy/charts/vertical-pod-autoscaler", "the chart's folder")
	check := flag.Bool("check", false, "fail if values.schema.json or README.md is not what would be generated")
	flag.Parse()
	if err := run(*chart, *check); err != nil {
		fmt.Fprintln(os.Stderr, "chartdocs:", err)
		os.Exit(1)
	}
}

func run(chart string, check bool) error {
	out, err := generate(chart)
	if err != nil {
		return err
	}
	var stale []string
	for _, name := range []string{"values.schema.json", "README.md"} {
		path := filepath.Join(chart, name)
		if check {
			have, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(have, out[name]) {
				stale = append(stale, path)
			}
			continue
		}
		if err := os.WriteFile(path, out[name], 0o644); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("%s not generated from values.yaml; run hack/update-chart.sh", strings.Join(stale, ", "))
	}
	return nil
}

// generate returns the contents of values.schema.json and README.md.
func generate(chart string) (map[string][]byte, error) {
	raw, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml: not a map")
	}
	root, err := parseMap(doc.Content[0], "")
	if err != nil {
		return nil, err
	}
	schema := root.schema()
	schema["$schema"] = "http://json-schema.org/draft-07/schema#"
	schema["title"] = "Values of the vertical-pod-autoscaler chart"
	// An umbrella chart passes global to its subcharts.
	schema["properties"].(map[string]any)["global"] = map[string]any{"type": "object"}
	js, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return nil, err
	}
	meta, err := readChart(chart)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"values.schema.json": append(js, '\n'),
		"README.md":          readme(meta, root),
	}, nil
}

// key is one key of values.yaml.
type key struct {
	path        string
	description string
	types       []string
	enum        []string
	open        bool
	node        *yaml.Node
	children    []*key // a closed map's keys, in file order
}

func parseMap(n *yaml.Node, prefix string) (*key, error) {
	k := &key{path: prefix, node: n}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		path := kn.Value
		if prefix != "" {
			path = prefix + "." + kn.Value
		}
		child, err := parseKey(kn, vn, path)
		if err != nil {
			return nil, err
		}
		k.children = append(k.children, child)
	}
	return k, nil
}

func parseKey(kn, vn *yaml.Node, path string) (*key, error) {
	k := &key{path: path, node: vn}
	var desc []string
	inDesc := false
	for _, line := range strings.Split(kn.HeadComment, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		switch {
		case strings.HasPrefix(line, "-- "):
			desc, inDesc = []string{strings.TrimPrefix(line, "-- ")}, true
		case strings.HasPrefix(line, "@type:"):
			for _, t := range strings.Split(strings.TrimPrefix(line, "@type:"), ",") {
				k.types = append(k.types, strings.TrimSpace(t))
			}
			inDesc = false
		case strings.HasPrefix(line, "@enum:"):
			for _, e := range strings.Split(strings.TrimPrefix(line, "@enum:"), ",") {
				k.enum = append(k.enum, strings.TrimSpace(e))
			}
			inDesc = false
		case line == "@open":
			k.open, inDesc = true, false
		case inDesc && line != "":
			desc = append(desc, line)
		default:
			inDesc = false
		}
	}
	k.description = strings.Join(desc, " ")
	for _, t := range k.types {
		switch t {
		case "string", "integer", "number", "boolean", "array", "object", "null":
		default:
			return nil, fmt.Errorf("values.yaml: %s: @type %q is not a JSON schema type", path, t)
		}
	}
	if vn.Kind == yaml.MappingNode && len(vn.Content) > 0 && !k.open {
		m, err := parseMap(vn, path)
		if err != nil {
			return nil, err
		}
		k.children = m.children
	}
	return k, nil
}

// closed is a map whose keys are listed.
func (k *key) closed() bool { return len(k.children) > 0 }

func (k *key) typeList() []string {
	if len(k.types) > 0 {
		return k.types
	}
	switch k.node.Kind {
	case yaml.MappingNode:
		return []string{"object"}
	case yaml.SequenceNode:
		return []string{"array"}
	}
	switch k.node.Tag {
	case "!!str":
		return []string{"string"}
	case "!!int":
		return []string{"integer"}
	case "!!float":
		return []string{"number"}
	case "!!bool":
		return []string{"boolean"}
	}
	return nil // null without @type: any
}

func (k *key) schema() map[string]any {
	s := map[string]any{}
	if k.description != "" {
		s["description"] = k.description
	}
	switch t := k.typeList(); len(t) {
	case 0:
	case 1:
		s["type"] = t[0]
	default:
		s["type"] = t
	}
	if len(k.enum) > 0 {
		s["enum"] = k.enum
	}
	if k.closed() || k.path == "" {
		props := map[string]any{}
		for _, c := range k.children {
			props[c.node2name()] = c.schema()
		}
		s["type"] = "object"
		s["properties"] = props
		s["additionalProperties"] = false
	}
	return s
}

func (k *key) node2name() string {
	if i := strings.LastIndex(k.path, "."); i >= 0 {
		return k.path[i+1:]
	}
	return k.path
}

type chartMeta struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Version     string `json:"version"`
	AppVersion  string `json:"appVersion"`
}

func readChart(chart string) (chartMeta, error) {
	var m chartMeta
	raw, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		return m, err
	}
	return m, sigsyaml.Unmarshal(raw, &m)
}

func readme(meta chartMeta, root *key) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", meta.Name)
	fmt.Fprintf(&b, "<!-- Generated from values.yaml by hack/update-chart.sh (hack/tools/helm/chartdocs); do not edit. -->\n\n")
	fmt.Fprintf(&b, "%s\n\n", meta.Description)
	fmt.Fprintf(&b, "Chart version %s, OpenVPA %s. The chart accepts the values keys of upstream's chart\n", meta.Version, meta.AppVersion)
	b.WriteString("(kubernetes/autoscaler `charts/vertical-pod-autoscaler`) with the same meaning; docs/helm.md in the\n")
	b.WriteString("repository says what differs, how the webhook gets its certificate, and how to install into any namespace.\n\n")
	b.WriteString("```sh\nhelm install vpa deploy/charts/vertical-pod-autoscaler --namespace openvpa-system --create-namespace\nhelm test vpa --namespace openvpa-system\n```\n\n")
	b.WriteString("Unknown keys are refused (values.schema.json).\n\n## Values\n\n")
	b.WriteString("| Key | Type | Default | Description |\n|-----|------|---------|-------------|\n")
	var walk func(k *key)
	walk = func(k *key) {
		for _, c := range k.children {
			if c.closed() {
				walk(c)
				continue
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.path, strings.Join(c.typeList(), " or "), defaultOf(c.node), strings.ReplaceAll(c.description, "|", "\\|"))
		}
	}
	walk(root)
	return b.Bytes()
}

// defaultOf renders a default compactly, as JSON.
func defaultOf(n *yaml.Node) string {
	var v any
	if err := n.Decode(&v); err != nil {
		return ""
	}
	if v == nil {
		return "`null`"
	}
	js, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return "`" + strings.ReplaceAll(string(js), "|", "\\|") + "`"
}
