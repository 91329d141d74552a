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

package component

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestLoggingFlags(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"defaults":              {},
		"json":                  {args: []string{"--logging-format=json", "-v=3"}},
		"unknown format":        {args: []string{"--logging-format=xml"}, wantErr: `logging: format: Invalid value: "xml": Unsupported log format`},
		"upstream's klog flags": {args: []string{"--logtostderr=false", "--stderrthreshold=WARNING"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := NewLogging(4, "INFO")
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			l.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, err := range l.Validate() {
				msgs = append(msgs, err.Error())
			}
			got := strings.Join(msgs, "; ")
			if (tc.wantErr == "") != (got == "") || !strings.Contains(got, tc.wantErr) {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
		})
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	NewLogging(4, "INFO").AddFlags(fs)
	if f := fs.Lookup("v"); f == nil || f.DefValue != "4" {
		t.Errorf("-v = %+v, want default 4", f)
	}
	// klog shows a severity by its number: INFO is 0.
	if f := fs.Lookup("stderrthreshold"); f == nil || f.DefValue != "0" {
		t.Errorf("--stderrthreshold = %+v, want default INFO (0)", f)
	}
}

func TestSectionsUsage(t *testing.T) {
	s := &Sections{}
	s.FlagSet("first").String("a", "", "flag a")
	s.FlagSet("second").Bool("b", false, "flag b")
	var out bytes.Buffer
	s.Usage(&out, "Usage: x [flags]")
	got := out.String()
	first, second := strings.Index(got, "First flags:"), strings.Index(got, "Second flags:")
	if !strings.HasPrefix(got, "Usage: x [flags]\n") || first < 0 || second < first || !strings.Contains(got[first:second], "--a string") {
		t.Errorf("usage:\n%s", got)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	s.AddTo(fs)
	if fs.Lookup("a") == nil || fs.Lookup("b") == nil {
		t.Error("AddTo did not add every section's flags")
	}
}

// TestStderrThresholdDefaultPerComponent: klog's flags are global, but each
// registration gets its own component's default, as the flag docs generator
// (all three components in one process) needs.
func TestStderrThresholdDefaultPerComponent(t *testing.T) {
	for _, tc := range []struct {
		threshold, want string
	}{{"INFO", "0"}, {"", klogStderrThreshold}, {"INFO", "0"}} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		NewLogging(0, tc.threshold).AddFlags(fs)
		if f := fs.Lookup("stderrthreshold"); f == nil || f.DefValue != tc.want {
			t.Errorf("threshold %q: --stderrthreshold default %+v, want %s", tc.threshold, f, tc.want)
		}
	}
	if klogStderrThreshold != "2" {
		t.Errorf("klog's own default = %q, want 2 (ERROR)", klogStderrThreshold)
	}
}
