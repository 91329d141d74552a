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
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// EnvClusterDir overrides where the cluster keeps its state (default _output/cluster in the
// repository). hack/cluster reads the same variable, so a test process and the scripts agree.
const EnvClusterDir = "CLUSTER_DIR"

// RealNodeName is the local cluster's real node (hack/cluster/node.sh), a kubelet with
// containerd, tainted openvpa.io/real-node=true:NoSchedule.
const RealNodeName = "openvpa-node"

// upTimeout bounds hack/cluster/up.sh, including a cold build of the binaries on a fresh machine.
const upTimeout = 30 * time.Minute

// Cluster is a running local control plane and clients for it. It is shared by all tests of a
// process; use NewNamespace to keep tests apart.
type Cluster struct {
	// RepoRoot is the repository's top folder.
	RepoRoot string
	// Dir holds the cluster's state: PKI, etcd data, logs, PID files and the kubeconfig.
	Dir string
	// KubeconfigPath is the admin (system:masters) kubeconfig.
	KubeconfigPath string
	// KubectlPath is the kubectl built with the cluster, of the cluster's version.
	KubectlPath string
	// BinDir holds the control plane's binaries.
	BinDir string
	// Ports are the cluster's listening ports by name, e.g. "APISERVER_PORT".
	Ports map[string]string

	// Config is the admin REST config; copy it (rest.CopyConfig) before changing it.
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

var (
	startOnce    sync.Once
	startCluster *Cluster
	startErr     error
)

// Start brings the local control plane up if it is not running and returns it. The first call in
// a process runs hack/cluster/up.sh (idempotent: a running cluster is reused, a stopped one is
// restarted, a fresh machine builds the binaries first); later calls return the same Cluster.
// If the cluster cannot start, the test fails with the script's output: e2e tests never skip.
func Start(t testing.TB) *Cluster {
	t.Helper()
	startOnce.Do(func() {
		startCluster, startErr = startUp()
	})
	if startErr != nil {
		t.Fatalf("local control plane is not available: %v", startErr)
	}
	return startCluster
}

func startUp() (*Cluster, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir := os.Getenv(EnvClusterDir)
	if dir == "" {
		dir = filepath.Join(root, "_output", "cluster")
	}
	if err := runUp(root, dir); err != nil {
		return nil, err
	}
	return Connect(root, dir)
}

func runUp(root, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "cluster", "up.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), EnvClusterDir+"="+dir)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// The script starts the control plane in sessions of its own with their output in log
	// files, so it returns while the cluster keeps running.
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/cluster/up.sh failed: %w\n%s", err, out.String())
	}
	return nil
}

// Connect returns a Cluster for the control plane whose state is in dir, without starting it.
// Most tests want Start.
func Connect(root, dir string) (*Cluster, error) {
	env, err := readEnvFile(filepath.Join(dir, "cluster.env"))
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's record (is it up?): %w", err)
	}
	c := &Cluster{
		RepoRoot:       root,
		Dir:            dir,
		KubeconfigPath: filepath.Join(dir, "kubeconfig"),
		BinDir:         env["BIN_DIR"],
		Ports:          map[string]string{},
	}
	c.KubectlPath = filepath.Join(c.BinDir, "kubectl")
	for k, v := range env {
		if strings.HasSuffix(k, "_PORT") {
			c.Ports[k] = v
		}
	}
	c.Config, err = clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", c.KubeconfigPath, err)
	}
	// Tests create objects in bursts; the client-side defaults (5 QPS) would only slow them down.
	c.Config.QPS, c.Config.Burst = 100, 200
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	return c, nil
}

// readEnvFile reads KEY=VALUE lines, skipping blank lines and # comments.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: malformed line %q", path, line)
		}
		env[k] = v
	}
	return env, s.Err()
}

// repoRoot finds the folder of this module's go.mod, walking up from the working directory
// (go test runs each package in its own folder).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/openvpa/openvpa\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/openvpa/openvpa above the working directory")
		}
		dir = parent
	}
}
