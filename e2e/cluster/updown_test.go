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
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	// No real node: the shared cluster's node owns the node namespace and addresses.
	in.env = []string{"CLUSTER_DIR=" + in.dir, "CLUSTER_NODES=2", "REAL_NODE=false"}
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

// TestPodsRunAfterRestart restarts a second control plane, and then kwok alone, and checks that
// kwok acts on pods at once: pods created right after cluster-up, or while kwok was down, run,
// and a deleted pod is removed. kwok used to leave them Pending or Terminating for minutes: a new
// kwok process waited for its predecessor's node leases to expire, ignored the pods' events
// meanwhile, and had no worker to replay them once it took the nodes over.
func TestPodsRunAfterRestart(t *testing.T) {
	in := newInstance(t)
	in.run(t, "up.sh")
	c := in.connect(t)
	ns := c.NewNamespace(t)
	c.CreateDeployment(t, ns, framework.Workload{Name: "before", Replicas: 2})
	before := c.WaitForPods(t, ns, "app=before", 2, framework.PodRunning)

	in.run(t, "down.sh")
	in.run(t, "up.sh")
	c = in.connect(t)

	// On a fresh cluster a pod runs within a second or two; 30 s leaves room for a loaded machine
	// and is well below the 40 s a previous kwok's leases take to expire.
	const deadline = 30 * time.Second
	ctx := context.Background()
	c.CreateDeployment(t, ns, framework.Workload{Name: "after", Replicas: 2})
	waitPods(t, c, ns, "app=after", deadline, allRunning(2))

	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, before[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, ns, "app=before", deadline, func(pods []corev1.Pod) error {
		for _, p := range pods {
			if p.Name == before[0].Name {
				return fmt.Errorf("deleted pod %s still there (deletionTimestamp %v)", p.Name, p.DeletionTimestamp)
			}
		}
		return nil
	})

	// kwok alone stops, as if it crashed; pods created meanwhile are scheduled to its nodes and
	// wait. cluster-up starts kwok again, which must take the nodes over and start them.
	pid := in.pids(t)["kwok"]
	if !procCheck(t, "proc_is", strconv.Itoa(pid), "kwok", in.dir) {
		t.Fatalf("PID file of kwok names pid %d, which is not this cluster's kwok", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, func() (bool, error) { return !alive(pid), nil })
	c.CreateDeployment(t, ns, framework.Workload{Name: "during", Replicas: 2})
	waitPods(t, c, ns, "app=during", time.Minute, func(pods []corev1.Pod) error {
		if len(pods) != 2 {
			return fmt.Errorf("%d pods, want 2", len(pods))
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				return fmt.Errorf("pod %s not scheduled yet", p.Name)
			}
		}
		return nil
	})
	in.run(t, "up.sh")
	waitPods(t, c, ns, "app=during", deadline, allRunning(2))
}

// allRunning accepts exactly n pods, all Running.
func allRunning(n int) func([]corev1.Pod) error {
	return func(pods []corev1.Pod) error {
		if len(pods) != n {
			return fmt.Errorf("%d pods, want %d", len(pods), n)
		}
		for _, p := range pods {
			if !framework.PodRunning(&p) {
				return fmt.Errorf("pod %s on node %q is %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
		return nil
	}
}

// waitPods polls the pods matching selector until check accepts them, and fails the test with
// check's last complaint if that has not happened within timeout.
func waitPods(t *testing.T, c *framework.Cluster, ns, selector string, timeout time.Duration, check func([]corev1.Pod) error) {
	t.Helper()
	framework.WaitFor(t, timeout, func() (bool, error) {
		list, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		if err := check(list.Items); err != nil {
			return false, err
		}
		return true, nil
	})
}
