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

package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// TestFixturesRoundTrip decodes upstream-style manifests strictly (an unknown
// field is an error) and re-encodes them: every field of the input must come
// back with the same value.
func TestFixturesRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		file string
		obj  any
	}{
		{name: "vpa with every field", file: "vpa-every-field.yaml", obj: &VerticalPodAutoscaler{}},
		{name: "checkpoint with every field", file: "checkpoint-every-field.yaml", obj: &VerticalPodAutoscalerCheckpoint{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			in, err := yaml.YAMLToJSONStrict(raw)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(in))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.obj); err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			out, err := json.Marshal(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			if err := json.Unmarshal(in, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if diff := semanticDiff("", want, got); diff != "" {
				t.Errorf("re-encoded object differs from the fixture: %s\nre-encoded: %s", diff, out)
			}
		})
	}
}

func TestStrictDecodeRejectsUnknownField(t *testing.T) {
	in := []byte(`{"spec":{"targetRef":{"kind":"Deployment","name":"x"},"updatePolicy":{"updateMod":"Off"}}}`)
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&VerticalPodAutoscaler{}); err == nil {
		t.Fatal("expected an error for the misspelt field updateMod")
	}
}

// semanticDiff compares two decoded JSON documents. Strings that are both
// quantities compare by value, since "1.5" and "1500m" are the same amount.
func semanticDiff(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want object, got %v", path, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s: lost on re-encoding", path, k)
			}
			if d := semanticDiff(path+"."+k, wv, gv); d != "" {
				return d
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("%s.%s: added on re-encoding", path, k)
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want %v, got %v", path, want, got)
		}
		for i := range w {
			if d := semanticDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	case string:
		if g, ok := got.(string); ok && g != w {
			wq, err1 := resource.ParseQuantity(w)
			gq, err2 := resource.ParseQuantity(g)
			if err1 == nil && err2 == nil && wq.Cmp(gq) == 0 {
				return ""
			}
		}
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("%s: want %v, got %v", path, want, got)
	}
	return ""
}
