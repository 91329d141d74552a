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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// PortNames are the ports hack/cluster takes from the environment.
var PortNames = []string{
	"ETCD_PORT", "ETCD_PEER_PORT", "APISERVER_PORT", "KCM_PORT", "SCHEDULER_PORT", "KWOK_PORT", "METRICS_SERVER_PORT",
}

// StartSecond starts a control plane of the test's own, beside the shared one: its own state
// folder and free ports, two KWOK nodes, no real node (the shared cluster's owns the node's
// namespace and addresses). It is for tests that need a whole cluster to themselves, such as one
// that installs into kube-system with cluster-wide names. It is stopped when the test ends.
func StartSecond(t testing.TB) *Cluster {
	t.Helper()
	shared := Start(t) // the repository root, and the binaries built
	dir := filepath.Join(t.TempDir(), "cluster")
	env := []string{EnvClusterDir + "=" + dir, "CLUSTER_NODES=2", "REAL_NODE=false"}
	for i, p := range FreePorts(t, len(PortNames)) {
		env = append(env, PortNames[i]+"="+strconv.Itoa(p))
	}
	script := func(name string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(shared.RepoRoot, "hack", "cluster", name))
		cmd.Dir = shared.RepoRoot
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	t.Cleanup(func() { _ = script("down.sh").Run() })
	if out, err := script("up.sh").CombinedOutput(); err != nil {
		t.Fatalf("starting a second control plane: %v\n%s", err, out)
	}
	c, err := Connect(shared.RepoRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
