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
package framework

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// stopGrace is how long StopProcess waits after SIGTERM before SIGKILL. The
// local kube-apiserver can ignore SIGTERM for over a minute while it drains.
const stopGrace = 15 * time.Second

// StopProcess stops one of the local cluster's processes by the name of its
// PID file (pids/<name>.pid: etcd, kube-apiserver, metrics-server, kubelet,
// containerd, ...): SIGTERM, then SIGKILL after stopGrace. It returns once
// the process has exited. StartStopped starts it again.
func (c *Cluster) StopProcess(t testing.TB, name string) {
	t.Helper()
	pid, err := c.processPID(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stopping %s (pid %d): %v", name, pid, err)
	}
	deadline := time.Now().Add(stopGrace)
	killed := false
	err = poll(clock.RealClock{}, 2*stopGrace, 50*time.Millisecond, func() (bool, error) {
		if !processAlive(pid) {
			return true, nil
		}
		if !killed && time.Now().After(deadline) {
			killed = true
			return false, syscall.Kill(pid, syscall.SIGKILL)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s (pid %d) did not exit: %v", name, pid, err)
	}
	t.Logf("stopped %s (pid %d)%s", name, pid, map[bool]string{true: " with SIGKILL", false: ""}[killed])
}

// StartStopped starts the cluster's stopped processes again (hack/cluster/up.sh
// keeps the running ones) and returns once every one is ready.
func (c *Cluster) StartStopped(t testing.TB) {
	t.Helper()
	if err := runUp(c.RepoRoot, c.Dir); err != nil {
		t.Fatal(err)
	}
}

// processPID reads pids/<name>.pid.
func (c *Cluster) processPID(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, "pids", name+".pid"))
	if err != nil {
		return 0, fmt.Errorf("no PID file of %s: %w", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("PID file of %s: %w", name, err)
	}
	if !processAlive(pid) {
		return 0, fmt.Errorf("%s (pid %d) is not running", name, pid)
	}
	return pid, nil
}

// processAlive tells whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// ProcessesNamed returns the host PIDs of the processes whose executable's
// base name is name: on the real node, the host sees the containers'
// processes.
func ProcessesNamed(name string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmd) == 0 {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmd), "\x00")
		if filepath.Base(argv0) == name && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		return nil, errors.New("no process named " + name)
	}
	return pids, nil
}
