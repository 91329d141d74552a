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
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/pkg/version"
)

// TestVersion: kubectl vpa version prints the plugin's version line, or the
// version object as JSON or YAML, without reading a kubeconfig.
func TestVersion(t *testing.T) {
	info := version.Get()
	line := "kubectl-vpa version " + info.String() + "\n"
	tests := map[string]struct {
		args    []string
		want    string
		decode  func([]byte, any) error
		wantErr string
	}{
		"line":                {args: []string{"version"}, want: line},
		"--version":           {args: []string{"--version"}, want: line},
		"json":                {args: []string{"version", "-o", "json"}, decode: json.Unmarshal},
		"yaml":                {args: []string{"version", "--output=yaml"}, decode: func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }},
		"no connection flags": {args: []string{"version", "--kubeconfig=/nonexistent"}, wantErr: "unknown flag: --kubeconfig"},
		"table refused":       {args: []string{"version", "-o", "table"}, wantErr: `unsupported output format "table" for version`},
		"argument":            {args: []string{"version", "extra"}, wantErr: `version takes no arguments, got "extra"`},
		"help to stderr":      {args: []string{"version", "--help"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "/nonexistent")
			var out, errOut bytes.Buffer
			err := Main(context.Background(), tc.args, &out, &errOut)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.decode != nil {
				var got version.Info
				if err := tc.decode(out.Bytes(), &got); err != nil {
					t.Fatalf("decoding %q: %v", out.String(), err)
				}
				if got != info {
					t.Errorf("decoded %+v, want %+v", got, info)
				}
				return
			}
			if got := out.String(); got != tc.want {
				t.Errorf("stdout %q, want %q", got, tc.want)
			}
			if name == "help to stderr" && !strings.Contains(errOut.String(), "kubectl vpa version [-o json|yaml]") {
				t.Errorf("stderr %q, want the usage", errOut.String())
			}
		})
	}
}
