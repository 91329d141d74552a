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

// Package componenttest runs a component's command line as a process, from
// its app package's tests: the test binary runs itself with the command's
// arguments, so that what a binary prints (in whichever logging format,
// which a process sets up once) can be checked without building it.
package componenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openvpa/openvpa/pkg/version"
)

// argsEnv carries the command's arguments, as JSON, to the test binary run
// as the command.
const argsEnv = "OPENVPA_COMPONENTTEST_ARGS"

// Main is a test binary's TestMain: run as the command by Run, it calls
// execute with the arguments and exits with its status; otherwise it runs
// the tests.
func Main(m *testing.M, execute func(ctx context.Context, args []string) int) {
	if encoded, ok := os.LookupEnv(argsEnv); ok {
		var args []string
		if err := json.Unmarshal([]byte(encoded), &args); err != nil {
			panic(err)
		}
		os.Exit(execute(context.Background(), args))
	}
	os.Exit(m.Run())
}

// Run runs the command (the test binary, through Main) with args and
// returns what it printed on stderr and its exit status.
func Run(t *testing.T, args ...string) (stderr string, status int) {
	t.Helper()
	_, stderr, status = Output(t, args...)
	return stderr, status
}

// Output runs the command as Run does and returns what it printed on
// stdout and on stderr, and its exit status.
func Output(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	encoded, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), argsEnv+"="+string(encoded))
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("running the command: %v", err)
	}
	return out.String(), errOut.String(), 0
}

// CheckVersion runs the command with --version and checks that it exits
// with status 0 and prints one line on stdout, "<name> version <version>
// (commit ..., built ...)", and nothing on stderr.
func CheckVersion(t *testing.T, name string) {
	t.Helper()
	stdout, stderr, status := Output(t, "--version")
	if status != 0 {
		t.Errorf("exit status %d, want 0; stderr:\n%s", status, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing", stderr)
	}
	want := version.Get().Line(name) + "\n"
	if stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
}

// CheckJSON checks that every non-empty line of stderr is a JSON object and
// that one of them is an error entry whose "err" holds wantErr.
func CheckJSON(t *testing.T, stderr, wantErr string) {
	t.Helper()
	found := false
	for _, line := range strings.Split(stderr, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("a line is not JSON (%v): %s", err, line)
			continue
		}
		if msg, ok := entry["err"].(string); ok && strings.Contains(msg, wantErr) {
			found = true
		}
	}
	if !found {
		t.Errorf("no JSON error entry holds %q; stderr:\n%s", wantErr, stderr)
	}
}

// Failure is a command line a component fails on at start.
type Failure struct {
	Args []string
	// JSON runs it with --logging-format=json.
	JSON bool
	// WantErr is in the error the component exits on.
	WantErr string
}

// CheckFailures runs each failure (through Main) and checks that it exits
// with status 1 and reports its error: with JSON, every line is JSON and the
// error is in an entry; in the text format, it is the last line,
// "<name>: <error>".
func CheckFailures(t *testing.T, name string, failures map[string]Failure) {
	t.Helper()
	for title, f := range failures {
		t.Run(title, func(t *testing.T) {
			args := f.Args
			if f.JSON {
				args = append([]string{"--logging-format=json"}, args...)
			}
			stderr, status := Run(t, args...)
			if status != 1 {
				t.Errorf("exit status %d, want 1; stderr:\n%s", status, stderr)
			}
			if f.JSON {
				CheckJSON(t, stderr, f.WantErr)
				return
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, name+": ") || !strings.Contains(last, f.WantErr) {
				t.Errorf("last line %q, want %q with %q; stderr:\n%s", last, name+": ...", f.WantErr, stderr)
			}
		})
	}
}

// CheckLogFile runs the command with args and upstream VPA's klog flags,
// the file ones among them, writing to a log file: the command must exit
// where args make it fail (status 1, wantErr in the last line of stderr,
// "<name>: <error>"), not on a flag, and the log file must hold the
// "Starting" line Execute logs once the options are valid, with -v=4's
// lines, if any, and klog's header.
func CheckLogFile(t *testing.T, name, wantErr string, args ...string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "component.log")
	args = append([]string{
		"--logtostderr=false", "--log-file=" + file, "--log-file-max-size=10", "--stderrthreshold=FATAL",
		"--add-dir-header", "--skip-log-headers", "--one-output", "--log-backtrace-at=nowhere.go:1",
		"--legacy-stderr-threshold-behavior=true", "--alsologtostderr=false",
	}, args...)
	stderr, status := Run(t, args...)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; status != 1 || !strings.HasPrefix(last, name+": ") || !strings.Contains(last, wantErr) {
		t.Fatalf("exit status %d, last line %q; want 1 and %q with %q; stderr:\n%s", status, last, name+": ...", wantErr, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no log file: %v", err)
	}
	if l := string(b); !strings.Contains(l, `] "Starting" logger="`+name+`"`) || !strings.HasPrefix(l, "I") {
		t.Errorf("the log file lacks the Starting line with its klog header:\n%s", l)
	}
	if strings.Contains(stderr, `"Starting"`) {
		t.Errorf("with --logtostderr=false and --stderrthreshold=FATAL, stderr has the Starting line:\n%s", stderr)
	}
}

// unreachableKubeconfig is a client configuration for an API server that is
// never reached.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: c
  context:
    cluster: c
    user: u
users:
- name: u
  user:
    token: t
current-context: c
`

// Kubeconfig writes a kubeconfig file for an API server that is never
// reached, so that a command gets past its options, into dir, and returns
// its path.
func Kubeconfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
