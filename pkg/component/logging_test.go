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
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/pkg/component/componenttest"
)

// TestMain runs the tests, or, run by componenttest.Output, logTestCommand.
func TestMain(m *testing.M) {
	componenttest.Main(m, func(ctx context.Context, args []string) int {
		return logTestCommand().Execute(ctx, args, os.Stdout, os.Stderr)
	})
}

// logTestCommand has the logging flags and, run, logs one line of each
// kind: at verbosity 0, 4 and 5, an error, and the standard library's.
func logTestCommand() *Command[string] {
	return &Command[string]{
		Name:    "logtest",
		Usage:   "Usage: logtest [flags]",
		Options: &testOptions{logging: NewLogging()},
		Run: func(ctx context.Context, _ string) error {
			logger := klog.FromContext(ctx)
			logger.Info("marker info")
			logger.V(4).Info("marker v4")
			logger.V(5).Info("marker v5")
			logger.Error(errors.New("boom"), "marker error")
			log.Print("marker stdlog")
			return nil
		},
	}
}

// upstreamKlogFlags are the klog flags upstream VPA 1.8.1's binaries have
// besides -v and --vmodule, by the name its --help shows.
var upstreamKlogFlags = []string{
	"add-dir-header", "alsologtostderr", "alsologtostderrthreshold", "legacy-stderr-threshold-behavior",
	"log-backtrace-at", "log-dir", "log-file", "log-file-max-size", "logtostderr", "one-output",
	"skip-headers", "skip-log-headers", "stderrthreshold",
}

func TestLoggingFlags(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"defaults":       {},
		"json":           {args: []string{"--logging-format=json", "-v=3"}},
		"unknown format": {args: []string{"--logging-format=xml"}, wantErr: `logging: format: Invalid value: "xml": Unsupported log format`},
		"upstream's klog flags": {args: []string{"--logtostderr=false", "--stderrthreshold=WARNING", "--log-dir=/tmp",
			"--log-file=/tmp/x.log", "--log-file-max-size=10", "--add-dir-header", "--skip-headers", "--skip-log-headers",
			"--one-output", "--log-backtrace-at=x.go:1", "--legacy-stderr-threshold-behavior=false", "--alsologtostderr"}},
		"json refuses klog flags": {args: []string{"--logging-format=json", "--log-file=/tmp/x.log", "--skip-headers"},
			wantErr: "logging: --log-file applies to --logging-format=text only, not json"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(resetKlogFlags)
			l := NewLogging()
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
}

// TestLoggingDefaults: -v and --stderrthreshold default to upstream's 4 and
// INFO, and klog's other flags are registered under upstream's names with
// klog's defaults, whatever an earlier command line in the process set.
func TestLoggingDefaults(t *testing.T) {
	t.Cleanup(resetKlogFlags)
	first := pflag.NewFlagSet("first", pflag.ContinueOnError)
	NewLogging().AddFlags(first)
	if err := first.Parse([]string{"--stderrthreshold=WARNING", "--log-file-max-size=7"}); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	NewLogging().AddFlags(fs)
	if f := fs.Lookup("v"); f == nil || f.DefValue != "4" {
		t.Errorf("-v = %+v, want default 4", f)
	}
	// klog shows a severity by its number: INFO is 0.
	if f := fs.Lookup("stderrthreshold"); f == nil || f.DefValue != "0" || f.Value.String() != "0" {
		t.Errorf("--stderrthreshold = %+v, want default and value INFO (0)", f)
	}
	for _, name := range upstreamKlogFlags {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("--%s is not registered", name)
			continue
		}
		if want := klogDefaults[strings.ReplaceAll(name, "-", "_")]; name != "stderrthreshold" && f.DefValue != want {
			t.Errorf("--%s default %q, want klog's %q", name, f.DefValue, want)
		}
	}
	if f := fs.Lookup("log-file-max-size"); f.DefValue != "1800" {
		t.Errorf("--log-file-max-size default %q after an earlier command line set 7, want 1800", f.DefValue)
	}
}

// TestUnderscoreSpelling: as upstream's binaries, a command line may spell
// klog's flags with "_" (--log_file), klog's own names.
func TestUnderscoreSpelling(t *testing.T) {
	t.Cleanup(resetKlogFlags)
	s := &Sections{}
	s.AddLogging(NewLogging())
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	s.AddTo(fs)
	if err := fs.Parse([]string{"--log_file=/tmp/x.log", "--skip_headers", "--log-dir=/tmp/d"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"log-file": "/tmp/x.log", "skip-headers": "true", "log-dir": "/tmp/d"} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
}

// resetKlogFlags sets klog's settings back to their defaults after a test
// parsed a command line.
func resetKlogFlags() {
	fs := pflag.NewFlagSet("reset", pflag.ContinueOnError)
	NewLogging().AddFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if def, ok := klogDefaults[strings.ReplaceAll(f.Name, "-", "_")]; ok && f.Name != "stderrthreshold" && f.Value.String() != def {
			if f.Name == "log-backtrace-at" {
				def = "" // unset; klog does not parse its own ":0"
			}
			_ = f.Value.Set(def)
		}
	})
}

// TestLogOutput runs logTestCommand with upstream's klog flags and checks
// where its lines go: each flag takes effect in the text format.
func TestLogOutput(t *testing.T) {
	header := regexp.MustCompile(`^[IWE]\d{4} `)
	tests := map[string]struct {
		args func(dir string) []string
		// check is given stderr and the content of every file in dir.
		check func(t *testing.T, stderr string, files map[string]string)
	}{
		"defaults: verbosity 4, klog's header, on stderr": {
			check: func(t *testing.T, stderr string, files map[string]string) {
				wantLines(t, "stderr", stderr, "marker info", "marker v4", "marker error", "marker stdlog")
				noLines(t, "stderr", stderr, "marker v5")
				if l := line(stderr, "marker info"); !header.MatchString(l) || !strings.Contains(l, " logging_test.go:") {
					t.Errorf("line %q has no klog header naming the caller", l)
				}
			},
		},
		"-v=5": {
			args:  func(string) []string { return []string{"-v=5"} },
			check: func(t *testing.T, stderr string, _ map[string]string) { wantLines(t, "stderr", stderr, "marker v5") },
		},
		"--log-file, stderr from INFO up": {
			args: func(dir string) []string {
				return []string{"--logtostderr=false", "--log-file=" + filepath.Join(dir, "x.log")}
			},
			check: func(t *testing.T, stderr string, files map[string]string) {
				wantLines(t, "x.log", files["x.log"], "marker info", "marker v4", "marker error", "marker stdlog")
				wantLines(t, "stderr", stderr, "marker info", "marker error")
			},
		},
		"--log_file, --stderrthreshold=ERROR": {
			args: func(dir string) []string {
				return []string{"--logtostderr=false", "--log_file=" + filepath.Join(dir, "x.log"), "--stderrthreshold=ERROR"}
			},
			check: func(t *testing.T, stderr string, files map[string]string) {
				wantLines(t, "x.log", files["x.log"], "marker info", "marker error")
				wantLines(t, "stderr", stderr, "marker error")
				noLines(t, "stderr", stderr, "marker info")
			},
		},
		"--log-dir": {
			args: func(dir string) []string { return []string{"--logtostderr=false", "--log-dir=" + dir} },
			check: func(t *testing.T, _ string, files map[string]string) {
				var all strings.Builder
				for _, content := range files {
					all.WriteString(content)
				}
				wantLines(t, "the files in --log-dir", all.String(), "marker info", "marker error")
			},
		},
		"--skip-headers": {
			args: func(string) []string { return []string{"--skip-headers"} },
			check: func(t *testing.T, stderr string, _ map[string]string) {
				if l := line(stderr, "marker info"); !strings.HasPrefix(l, `"marker info"`) {
					t.Errorf("line %q has a header", l)
				}
			},
		},
		"--add-dir-header": {
			args: func(string) []string { return []string{"--add-dir-header"} },
			check: func(t *testing.T, stderr string, _ map[string]string) {
				if l := line(stderr, "marker info"); !strings.Contains(l, " component/logging_test.go:") {
					t.Errorf("line %q does not name the caller's directory", l)
				}
			},
		},
		"--legacy-stderr-threshold-behavior=false honours --stderrthreshold on stderr": {
			args: func(string) []string {
				return []string{"--legacy-stderr-threshold-behavior=false", "--stderrthreshold=ERROR"}
			},
			check: func(t *testing.T, stderr string, _ map[string]string) {
				wantLines(t, "stderr", stderr, "marker error")
				noLines(t, "stderr", stderr, "marker info")
			},
		},
		"json: every line a JSON entry, verbosity 4": {
			args: func(string) []string { return []string{"--logging-format=json"} },
			check: func(t *testing.T, stderr string, _ map[string]string) {
				wantLines(t, "stderr", stderr, "marker info", "marker v4", "marker error", "marker stdlog")
				noLines(t, "stderr", stderr, "marker v5")
				for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
					if !json.Valid([]byte(l)) {
						t.Errorf("not JSON: %s", l)
					}
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var args []string
			if tc.args != nil {
				args = tc.args(dir)
			}
			stdout, stderr, status := componenttest.Output(t, args...)
			if status != 0 {
				t.Fatalf("exit status %d; stderr:\n%s", status, stderr)
			}
			// The json format writes to stdout, klog's output to stderr.
			tc.check(t, stdout+stderr, readFiles(t, dir))
		})
	}
}

// TestKlogFlagsWithJSON: with --logging-format=json a klog flag, which only
// the text format honours, is refused.
func TestKlogFlagsWithJSON(t *testing.T) {
	stderr, status := componenttest.Run(t, "--logging-format=json", "--log-file=/nonexistent/x.log")
	if status != 1 || !strings.Contains(stderr, "--log-file applies to --logging-format=text only") {
		t.Errorf("exit status %d, stderr %q; want 1 and --log-file refused", status, stderr)
	}
}

func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // klog's symbolic links to the latest file
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

// line is the first line of out holding s.
func line(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func wantLines(t *testing.T, where, out string, markers ...string) {
	t.Helper()
	for _, m := range markers {
		if !strings.Contains(out, m) {
			t.Errorf("%s lacks %q:\n%s", where, m, out)
		}
	}
}

func noLines(t *testing.T, where, out string, markers ...string) {
	t.Helper()
	for _, m := range markers {
		if strings.Contains(out, m) {
			t.Errorf("%s has %q:\n%s", where, m, out)
		}
	}
}
