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

// Package benchenv holds what the scale harnesses under hack/ (scale-test,
// policy-scale) share about the cluster they run against: where its
// kubeconfig is, how their Deployments spread over namespaces, a free local
// port for a component's metrics, and the component's process.
package benchenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultKubeconfig is $KUBECONFIG, else the local cluster's
// _output/cluster/kubeconfig (relative to the repository's root).
func DefaultKubeconfig() string {
	if k := os.Getenv("KUBECONFIG"); k != "" {
		return k
	}
	return filepath.Join("_output", "cluster", "kubeconfig")
}

// Namespaces returns the namespaces of a run over n namespaces: prefix
// itself for one, prefix-0 ... prefix-(n-1) otherwise.
func Namespaces(prefix string, n int) []string {
	if n <= 1 {
		return []string{prefix}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// NamespaceOf returns the namespace of Deployment i of a run over n
// namespaces: they take turns.
func NamespaceOf(prefix string, n, i int) string {
	if n <= 1 {
		return prefix
	}
	return fmt.Sprintf("%s-%d", prefix, i%n)
}

// FreePort returns a loopback TCP port free at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Process is a component started by StartProcess.
type Process struct {
	Cmd *exec.Cmd
	// Exited receives the process's exit once.
	Exited <-chan error
	// Done is closed when the process has exited.
	Done <-chan struct{}
}

// StartProcess starts bin with its output in log.
func StartProcess(bin string, args []string, log *os.File) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		exited <- cmd.Wait()
		close(done)
	}()
	return &Process{Cmd: cmd, Exited: exited, Done: done}, nil
}

// Stop sends SIGTERM, and SIGKILL after 30 s, unless the process has exited,
// and returns once it has.
func (p *Process) Stop() {
	select {
	case <-p.Done:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Done:
	case <-time.After(30 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.Done
	}
}
