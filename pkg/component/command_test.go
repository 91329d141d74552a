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
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openvpa/openvpa/pkg/version"
)

// testOptions have one flag, --value, which must not be "bad", and, with
// logging, the logging flags. Logging is applied at most once in a process:
// only invalid logging flags are tested here, the formats in the binaries'
// tests (componenttest).
type testOptions struct {
	value     string
	logging   *Logging
	configErr error
}

func (o *testOptions) FlagSections() *Sections {
	s := &Sections{}
	s.FlagSet("test").StringVar(&o.value, "value", "", "a value")
	if o.logging != nil {
		s.AddLogging(o.logging)
	}
	return s
}

func (o *testOptions) Validate() []error {
	var errs []error
	if o.logging != nil {
		errs = o.logging.Validate()
	}
	if o.value == "bad" {
		errs = append(errs, errors.New("--value must not be bad"), errors.New("second problem"))
	}
	return errs
}

func (o *testOptions) Config() (string, error) { return o.value, o.configErr }

// TestExecuteText: in the text format, the error a command exits on is the
// line "<name>: <error>" on stderr, as the binaries printed it before.
func TestExecuteText(t *testing.T) {
	tests := map[string]struct {
		args      []string
		logging   bool
		configErr error
		runErr    error
		wantCode  int
		wantOut   string
		wantRun   string
		// wantStdout is all of stdout.
		wantStdout string
	}{
		"runs":           {args: []string{"--value=ok"}, wantRun: "ok"},
		"help":           {args: []string{"--help"}, wantOut: "Usage: test [flags]\n\nTest flags:"},
		"version":        {args: []string{"--value=bad", "--version"}, wantStdout: "test version " + version.Get().String() + "\n"},
		"help lists it":  {args: []string{"--help"}, wantOut: "Usage: test [flags]\n\nTest flags:\n\n      --value string   a value\n\nVersion flags:\n\n      --version   Print the version"},
		"unknown flag":   {args: []string{"--nope"}, wantCode: 1, wantOut: "test: unknown flag: --nope\n"},
		"argument":       {args: []string{"extra"}, wantCode: 1, wantOut: "test: unexpected argument \"extra\"\n"},
		"every problem":  {args: []string{"--value=bad"}, wantCode: 1, wantOut: "test: --value must not be bad\nsecond problem\n"},
		"bad log format": {args: []string{"--logging-format=xml"}, logging: true, wantCode: 1, wantOut: "test: logging: format: Invalid value: \"xml\": Unsupported log format\n"},
		"config fails":   {configErr: errors.New("no kubeconfig"), wantCode: 1, wantOut: "test: no kubeconfig\n"},
		"run fails":      {runErr: errors.New("port in use"), wantCode: 1, wantOut: "test: port in use\n", wantRun: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var ran string
			o := &testOptions{configErr: tc.configErr}
			if tc.logging {
				o.logging = NewLogging()
			}
			c := &Command[string]{
				Name:    "test",
				Usage:   "Usage: test [flags]",
				Options: o,
				Run: func(_ context.Context, value string) error {
					ran = value
					return tc.runErr
				},
			}
			var stdout, stderr bytes.Buffer
			code := c.Execute(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit status %d, want %d", code, tc.wantCode)
			}
			if got := stderr.String(); tc.wantOut == "" && got != "" || !strings.HasPrefix(got, tc.wantOut) {
				t.Errorf("stderr %q, want starting with %q", got, tc.wantOut)
			}
			if got := stdout.String(); got != tc.wantStdout {
				t.Errorf("stdout %q, want %q", got, tc.wantStdout)
			}
			if ran != tc.wantRun {
				t.Errorf("ran with %q, want %q", ran, tc.wantRun)
			}
		})
	}
}
