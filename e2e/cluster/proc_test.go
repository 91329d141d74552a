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

package cluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openvpa/openvpa/e2e/framework"
)

// These tests exercise hack/cluster's start-up checks (up.sh's start and wait_ready, proc.sh)
// on stand-in processes; they need no control plane.

// hackCluster returns the absolute path of hack/cluster (go test runs in e2e/cluster).
func hackCluster(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "hack", "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// procCheck runs one of proc.sh's functions and reports whether it returned 0.
func procCheck(t *testing.T, fn string, args ...string) bool {
	t.Helper()
	script := `source "$1"; fn=$2; shift 2; "$fn" "$@"`
	cmd := exec.Command("bash", append([]string{"-c", script, "bash", filepath.Join(hackCluster(t), "proc.sh"), fn}, args...)...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return true
	}
	if _, ok := err.(*exec.ExitError); !ok || len(out) > 0 {
		t.Fatalf("%s %v: %v\n%s", fn, args, err, out)
	}
	return false
}

// procState reads the state letter from /proc/<pid>/stat ("" if the process is gone).
func procState(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return ""
	}
	return string(data[i+2])
}

// TestStartSurvivesSlowExec starts a component with up.sh's start and waits for it with
// wait_ready while the component has been forked but has not exec'd its binary yet, as happens on
// a loaded machine. Its log is a FIFO, so the forked shell blocks opening it until the test
// reads from it. Until the exec, /proc shows the forking shell's command line; a start-up check
// that judged liveness by the command line declared such a component dead ("exited during
// start-up") although it was about to run.
func TestStartSurvivesSlowExec(t *testing.T) {
	t.Parallel()
	// The stand-in "kwok" is tail following a file of the cluster's folder: like a component, it
	// runs until stopped, and an argument names the cluster's folder.
	dir, bin := fakeClusterDirs(t)
	conf := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "logs", "kwok.log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")

	// The paths come from the environment: as in up.sh, the forking shell's command line must not
	// name the cluster's folder.
	script := `set -euo pipefail
source "${HACK_CLUSTER}/up.sh"
start kwok -f "${CONF}"
wait_ready kwok 30 test -e "${READY}"
echo started`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "CLUSTER_DIR="+dir, "CLUSTER_BIN_DIR="+bin,
		"HACK_CLUSTER="+hackCluster(t), "CONF="+conf, "READY="+ready)
	// A file, not a pipe: the forked shell inherits the script's output, and Wait would wait for
	// it to close a pipe.
	out, err := os.Create(filepath.Join(t.TempDir(), "start.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	output := func() string {
		data, _ := os.ReadFile(out.Name())
		return string(data)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, which the forked shell shares until setsid: the cleanup can end
	// both wherever the test stopped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var runErr error
	done := make(chan struct{})
	go func() { runErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})

	pidFile := filepath.Join(dir, "pids", "kwok.pid")
	var pid int
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		data, err := os.ReadFile(pidFile)
		if err != nil {
			return false, err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil, err
	})
	t.Cleanup(func() {
		// Stop the stand-in only if it is still the process the test started.
		if procCheck(t, "proc_is", strconv.Itoa(pid), "kwok", dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	// The forked shell is blocked before its exec: alive, but not yet the component.
	if !procCheck(t, "proc_alive", strconv.Itoa(pid)) {
		t.Fatalf("proc_alive: the forked, not yet exec'd process %d is reported dead", pid)
	}
	if procCheck(t, "proc_is", strconv.Itoa(pid), "kwok", dir) {
		t.Fatalf("proc_is: process %d is taken for the component before it exec'd it", pid)
	}

	// The slow exec itself: for two seconds the component does not get past its fork. Start-up
	// must wait through it rather than give up.
	select {
	case <-done:
		t.Fatalf("start-up ended while the component was still being started (%v):\n%s", runErr, output())
	case <-time.After(2 * time.Second):
	}

	// Let the shell open its log and exec, then make the component "ready".
	r, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { _, _ = io.Copy(io.Discard, r) }()
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	select {
	case <-done:
		if runErr != nil || !strings.Contains(output(), "started") {
			t.Fatalf("start-up failed: %v\n%s", runErr, output())
		}
	case <-time.After(time.Minute):
		t.Fatalf("start-up not done a minute after the component could exec:\n%s", output())
	}
	if !procCheck(t, "proc_is", strconv.Itoa(pid), "kwok", dir) {
		t.Errorf("proc_is: the started component (pid %d) is not recognised", pid)
	}
}

// TestStartReportsExit checks that a component that exits during start-up is reported as such,
// with its log.
func TestStartReportsExit(t *testing.T) {
	t.Parallel()
	// The stand-in "kwok", tail, of a file that does not exist prints an error and exits.
	dir, bin := fakeClusterDirs(t)
	script := `set -euo pipefail
source "$1"
start kwok -f "$2"
wait_ready kwok 30 false`
	cmd := exec.Command("bash", "-c", script, "bash", filepath.Join(hackCluster(t), "up.sh"), filepath.Join(dir, "missing.yaml"))
	cmd.Env = append(os.Environ(), "CLUSTER_DIR="+dir, "CLUSTER_BIN_DIR="+bin)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("start-up of a component that exits succeeded:\n%s", out)
	}
	for _, want := range []string{"kwok exited during start-up", "missing.yaml"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not contain %q:\n%s", want, out)
		}
	}
}

// TestProcAlive checks proc.sh's liveness check on a running process, a zombie and a PID that
// does not exist.
func TestProcAlive(t *testing.T) {
	t.Parallel()
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	if !procCheck(t, "proc_alive", strconv.Itoa(sleep.Process.Pid)) {
		t.Errorf("proc_alive: a running process is reported dead")
	}

	// An exited child that has not been waited for stays a zombie.
	exited := exec.Command("true")
	if err := exited.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exited.Wait() })
	pid := exited.Process.Pid
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		return procState(pid) == "Z", nil
	})
	if procCheck(t, "proc_alive", strconv.Itoa(pid)) {
		t.Errorf("proc_alive: a zombie is reported alive")
	}
	if err := exited.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []string{strconv.Itoa(pid), "", "0", "x"} {
		if procCheck(t, "proc_alive", pid) {
			t.Errorf("proc_alive %q: reported alive", pid)
		}
	}
}

// fakeClusterDirs returns a cluster folder (with logs/ and pids/) and a bin
// folder whose "kwok" is tail, a stand-in component; both are removed when
// the test ends.
func fakeClusterDirs(t *testing.T) (dir, bin string) {
	t.Helper()
	tmp := t.TempDir()
	dir, bin = filepath.Join(tmp, "cluster"), filepath.Join(tmp, "bin")
	for _, d := range []string{filepath.Join(dir, "logs"), filepath.Join(dir, "pids"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tail, err := exec.LookPath("tail")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tail, filepath.Join(bin, "kwok")); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}
