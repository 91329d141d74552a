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
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// stopTimeout is how long a stopped component gets to exit after SIGTERM before SIGKILL.
const stopTimeout = 10 * time.Second

// Component is a program to run against the cluster, usually an OpenVPA component.
type Component struct {
	// Name identifies the process in logs; default: the binary's base name.
	Name string
	// Binary is the executable's path (see BuildBinary).
	Binary string
	// Args are the program's arguments; the kubeconfig flag is appended to them.
	Args []string
	// ServiceAccount is "namespace/name" of the ServiceAccount the process acts as, so it has
	// exactly that account's RBAC permissions. Empty means cluster admin.
	ServiceAccount string
	// KubeconfigFlag is the flag that receives the kubeconfig path; default "--kubeconfig".
	// "-" passes no flag (the path is always in $KUBECONFIG).
	KubeconfigFlag string
	// Env is added to the test process's environment.
	Env []string
}

// Process is a running Component.
type Process struct {
	Name string
	// Kubeconfig is the kubeconfig the process uses.
	Kubeconfig string
	// LogPath is the file with the process's standard output and error.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// RunComponent starts the component as a process in its own process group. When the test ends
// the process is stopped, and if the test failed its log is written to the test's output.
func (c *Cluster) RunComponent(t testing.TB, comp Component) *Process {
	t.Helper()
	name := comp.Name
	if name == "" {
		name = filepath.Base(comp.Binary)
	}
	dir := t.TempDir()
	kubeconfig := c.KubeconfigPath
	if comp.ServiceAccount != "" {
		ns, sa, ok := strings.Cut(comp.ServiceAccount, "/")
		if !ok || ns == "" || sa == "" {
			t.Fatalf("component %s: ServiceAccount %q is not namespace/name", name, comp.ServiceAccount)
		}
		kubeconfig = c.ImpersonatingKubeconfig(t, ns, sa)
	}
	args := append([]string(nil), comp.Args...)
	switch comp.KubeconfigFlag {
	case "":
		args = append(args, "--kubeconfig="+kubeconfig)
	case "-":
	default:
		args = append(args, comp.KubeconfigFlag+"="+kubeconfig)
	}
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(comp.Binary, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), comp.Env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &Process{Name: name, Kubeconfig: kubeconfig, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Logf("started %s (pid %d) as %s", name, cmd.Process.Pid, orAdmin(comp.ServiceAccount))
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("----- log of %s -----\n%s\n----- end of log of %s -----", name, p.Log(), name)
		}
	})
	return p
}

func orAdmin(sa string) string {
	if sa == "" {
		return "cluster admin"
	}
	return "ServiceAccount " + sa
}

// Stop ends the process: SIGTERM to its process group, SIGKILL after 10 s. Calling it again, or
// after the process exited, does nothing.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Logf("%s did not stop within %s of SIGTERM; killing it", p.Name, stopTimeout)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// Signal sends sig to the process (not its group): SIGKILL for a crash,
// SIGTERM for a graceful stop the test then waits for.
func (p *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(p.cmd.Process.Pid, sig)
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Wait waits up to timeout for the process to exit by itself and returns how it ended
// (nil for exit status 0). It fails the test if the process is still running at the deadline.
func (p *Process) Wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s still running after %s", p.Name, timeout)
		return nil
	}
}

// Log returns what the process has written so far.
func (p *Process) Log() string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(log unavailable: %v)", err)
	}
	return string(data)
}

// ServiceAccountUser is the user name a ServiceAccount authenticates as.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// ImpersonatingKubeconfig writes a kubeconfig that uses the admin credentials to impersonate the
// ServiceAccount namespace/name, and returns its path. The API server then authorises every
// request as that ServiceAccount (with its groups), so only the account's RBAC applies. The
// ServiceAccount need not exist for the kubeconfig to work; its bindings decide what it may do.
func (c *Cluster) ImpersonatingKubeconfig(t testing.TB, namespace, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), namespace+"-"+name+".kubeconfig")
	if err := writeImpersonatingKubeconfig(c.KubeconfigPath, path, ServiceAccountUser(namespace, name)); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeImpersonatingKubeconfig(admin, path, user string) error {
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		return err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return fmt.Errorf("%s: current context %q not found", admin, cfg.CurrentContext)
	}
	auth, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok {
		return fmt.Errorf("%s: user %q not found", admin, ctx.AuthInfo)
	}
	auth = auth.DeepCopy()
	auth.Impersonate = user
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{user: auth}
	ctx = ctx.DeepCopy()
	ctx.AuthInfo = user
	cfg.Contexts = map[string]*clientcmdapi.Context{cfg.CurrentContext: ctx}
	return clientcmd.WriteToFile(*cfg, path)
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
)

// BuildBinary builds a main package of this module (e.g. "./recommender") once per test process
// into _output/e2e/bin and returns the binary's path.
func (c *Cluster) BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if path, ok := buildCache[pkg]; ok {
		return path
	}
	dir := filepath.Join(c.RepoRoot, "_output", "e2e", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(strings.TrimSuffix(pkg, "/"))
	path := filepath.Join(dir, name)
	// Packages run in parallel may build the same binary: write aside, then rename.
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp.Name(), pkg)
	cmd.Dir = c.RepoRoot
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.Remove(tmp.Name())
		t.Fatalf("go build %s: %v\n%s", pkg, err, out.String())
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatal(err)
	}
	buildCache[pkg] = path
	return path
}
