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

package main

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// roleEnv makes the test binary act as something else when a test starts it
// again: "pause" runs main, "exit" exits at once.
const roleEnv = "PAUSE_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "pause":
		main()
	case "exit":
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func self(t *testing.T, role string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	return cmd
}

func TestReapCollectsEveryExitedChild(t *testing.T) {
	var want []int
	for range 3 {
		cmd := self(t, "exit")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		want = append(want, cmd.Process.Pid)
	}
	var got []int
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("reaped %v, want %v", got, want)
		}
		got = append(got, reap()...)
		time.Sleep(10 * time.Millisecond)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reaped %v, want %v", got, want)
	}
	if pids := reap(); len(pids) != 0 {
		t.Errorf("with no children left, reap() = %v", pids)
	}
}

func TestRunReapsOnSIGCHLDAndStopsOnSIGINTOrSIGTERM(t *testing.T) {
	for _, stop := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(stop.String(), func(t *testing.T) {
			sigs := make(chan os.Signal, 4)
			sigs <- syscall.SIGCHLD
			sigs <- syscall.SIGHUP // not asked for; ignored
			sigs <- syscall.SIGCHLD
			sigs <- stop
			reaps := 0
			code := run(sigs, func() []int { reaps++; return nil })
			if code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			if reaps != 2 {
				t.Errorf("reaped %d times, want once per SIGCHLD (2)", reaps)
			}
			if len(sigs) != 0 {
				t.Errorf("%d signals left unread", len(sigs))
			}
		})
	}
}

// TestProcessExitsZeroOnSIGTERM runs the program as a process, as the
// runtime does, and stops it as the kubelet does.
func TestProcessExitsZeroOnSIGTERM(t *testing.T) {
	cmd := self(t, "pause")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(stderr)
	// The first line is written once the signal handler is in place.
	if !lines.Scan() || !strings.Contains(lines.Text(), "waiting for SIGINT or SIGTERM") {
		t.Fatalf("first line %q, %v", lines.Text(), lines.Err())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		t.Log(lines.Text())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pause ended with %v, want exit code 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pause did not exit within 30s of SIGTERM")
	}
}
