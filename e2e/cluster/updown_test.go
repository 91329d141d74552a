package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/e2e/framework"
)

// portNames are the ports hack/cluster takes from the environment.
var portNames = []string{
	"ETCD_PORT", "ETCD_PEER_PORT", "APISERVER_PORT", "KCM_PORT", "SCHEDULER_PORT", "KWOK_PORT", "METRICS_SERVER_PORT",
}

// instance is a second control plane with its own state folder and ports, so starting and
// stopping it leaves the shared cluster that other tests use alone.
type instance struct {
	root, dir string
	env       []string
	ports     []string
}

// newInstance prepares a second control plane on free ports (not started) and makes sure it is
// stopped when the test ends.
func newInstance(t *testing.T) *instance {
	t.Helper()
	shared := framework.Start(t) // for the repository root and to have the binaries built
	in := &instance{root: shared.RepoRoot, dir: filepath.Join(t.TempDir(), "cluster")}
	for _, p := range framework.FreePorts(t, len(portNames)) {
		in.ports = append(in.ports, strconv.Itoa(p))
	}
	in.env = []string{"CLUSTER_DIR=" + in.dir, "CLUSTER_NODES=2"}
	for i, name := range portNames {
		in.env = append(in.env, name+"="+in.ports[i])
	}
	t.Cleanup(func() {
		// Whatever happened, do not leave the second cluster running.
		cmd := exec.Command(filepath.Join(in.root, "hack", "cluster", "down.sh"))
		cmd.Env = append(os.Environ(), in.env...)
		_ = cmd.Run()
	})
	return in
}

// runE runs a hack/cluster script against the instance and returns its output and duration.
func (in *instance) runE(script string) (string, time.Duration, error) {
	cmd := exec.Command(filepath.Join(in.root, "hack", "cluster", script))
	cmd.Dir = in.root
	cmd.Env = append(os.Environ(), in.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	return out.String(), time.Since(start), err
}

func (in *instance) run(t *testing.T, script string) (string, time.Duration) {
	t.Helper()
	out, took, err := in.runE(script)
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out, took
}

// connect returns clients for the instance.
func (in *instance) connect(t *testing.T) *framework.Cluster {
	t.Helper()
	c, err := framework.Connect(in.root, in.dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (in *instance) pids(t *testing.T) map[string]int {
	t.Helper()
	pids := map[string]int{}
	files, err := filepath.Glob(filepath.Join(in.dir, "pids", "*.pid"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		pids[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
	}
	return pids
}

// alive reports whether the process exists and is not a zombie (an exited process that its
// parent, here whatever adopted the detached components, has not reaped yet).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}

func listening(port string) bool {
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// runBoth runs two scripts at the same time and fails the test if either fails.
func (in *instance) runBoth(t *testing.T, a, b string) {
	t.Helper()
	type result struct {
		script, out string
		err         error
	}
	results := make(chan result, 2)
	for _, script := range []string{a, b} {
		go func() {
			out, _, err := in.runE(script)
			results <- result{script, out, err}
		}()
	}
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Errorf("%s (run beside another script): %v\n%s", r.script, r.err, r.out)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestClusterDownUp starts a second control plane, restarts it, checks that cluster-up reuses a
// running cluster, that cluster-up and cluster-down can run at the same time and twice, and that
// cluster-down leaves no process and no listening port behind.
func TestClusterDownUp(t *testing.T) {
	in := newInstance(t)

	// Two at once, as parallel test packages do: one starts the cluster, the other finds it.
	start := time.Now()
	in.runBoth(t, "up.sh", "up.sh")
	t.Logf("two cluster-ups at once with new state: %s", time.Since(start).Round(100*time.Millisecond))
	first := in.pids(t)
	if len(first) != 6 {
		t.Fatalf("PID files for %v, want the 6 components", first)
	}
	for name, pid := range first {
		if !alive(pid) {
			t.Errorf("%s (pid %d) not running after cluster-up", name, pid)
		}
	}

	_, reused := in.run(t, "up.sh")
	t.Logf("cluster-up of a running cluster: %s", reused.Round(100*time.Millisecond))
	for name, pid := range in.pids(t) {
		if first[name] != pid {
			t.Errorf("cluster-up restarted a running %s (pid %d, then %d)", name, first[name], pid)
		}
	}

	in.run(t, "down.sh")
	_, restart := in.run(t, "up.sh")
	// Logged, not asserted: timings depend on the machine's load (see hack/cluster/README.md).
	t.Logf("cluster-up with existing state (warm): %s", restart.Round(100*time.Millisecond))

	c := in.connect(t)
	nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil || len(nodes.Items) != 2 {
		t.Fatalf("second cluster: nodes %v, err %v", nodes, err)
	}

	// A stop beside a start: they take turns, so the cluster ends up either fully running (the
	// stop went first) or fully stopped, never half of it.
	in.runBoth(t, "up.sh", "down.sh")
	after := in.pids(t)
	switch len(after) {
	case 0:
		t.Log("cluster-down went second")
	case 6:
		t.Log("cluster-up went second")
		for name, pid := range after {
			if !alive(pid) {
				t.Errorf("%s (pid %d) not running after cluster-up", name, pid)
			}
		}
	default:
		t.Errorf("after cluster-up and cluster-down at once, PID files for %v: want all 6 components or none", after)
	}

	running := in.pids(t)
	in.run(t, "down.sh")
	// Stopping a stopped cluster does nothing and succeeds.
	in.run(t, "down.sh")
	for name, pid := range running {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after cluster-down", name, pid)
		}
	}
	for i, port := range in.ports {
		if listening(port) {
			t.Errorf("%s %s still listening after cluster-down", portNames[i], port)
		}
	}
	if left := in.pids(t); len(left) != 0 {
		t.Errorf("PID files left after cluster-down: %v", left)
	}
}
