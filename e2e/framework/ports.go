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
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Ports are handed out below both the kernel's ephemeral range (which it gives to port-0
// binds and outgoing connections, so a port it handed out once can come back to anyone) and
// the NodePort range (kube-proxy routes 127.0.0.1:NodePort to Services).
const (
	portsFrom     = 10000
	nodePortsFrom = 30000
)

// portRegistry remembers the ports handed out in this process and holds an flock on a file per
// port, so the e2e packages, which run as parallel processes, never hand out the same port
// twice. The locks live as long as the process: a component a test starts may bind its port
// at any time before the test ends.
type portRegistry struct {
	mu    sync.Mutex
	dir   string
	given map[int]*os.File
}

var ports = &portRegistry{dir: filepath.Join(os.TempDir(), "openvpa-e2e-ports"), given: map[int]*os.File{}}

// FreePorts returns n distinct loopback ports that no other test process holds and that are
// free on every address, for components a test starts (webhook, metrics and health servers, a
// second control plane). The ports are below the kernel's ephemeral range, so no port-0 bind
// or outgoing connection takes one between this call and the component's bind.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	got, err := ports.take(n, ephemeralStart())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// FreePort is FreePorts for one port.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePorts(t, 1)[0]
}

// take returns n ports in [portsFrom, min(upto, nodePortsFrom)), starting at a random one so
// parallel processes seldom try the same ports first.
func (r *portRegistry) take(n, upto int) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, fmt.Errorf("port locks: %w", err)
	}
	end := min(upto, nodePortsFrom)
	size := end - portsFrom
	if size <= 0 {
		return nil, fmt.Errorf("no ports between %d and %d", portsFrom, end)
	}
	out := make([]int, 0, n)
	start := rand.IntN(size)
	for i := 0; i < size && len(out) < n; i++ {
		p := portsFrom + (start+i)%size
		if _, ok := r.given[p]; ok {
			continue
		}
		f, ok, err := r.lock(p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if !bindable(p) {
			f.Close() // releases the lock
			continue
		}
		r.given[p] = f
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("only %d of %d free ports between %d and %d", len(out), n, portsFrom, end)
	}
	return out, nil
}

// lock takes the port's lock file without waiting; ok is false when another process holds it.
func (r *portRegistry) lock(port int) (*os.File, bool, error) {
	f, err := os.OpenFile(filepath.Join(r.dir, strconv.Itoa(port)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("port lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("port lock %d: %w", port, err)
	}
	return f, true, nil
}

// bindable reports whether the port is free on every address: the components bind the
// wildcard address (health servers) or loopback (webhooks).
func bindable(port int) bool {
	for _, addr := range []string{":", "127.0.0.1:"} {
		l, err := net.Listen("tcp", addr+strconv.Itoa(port))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux's default when it
// cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		if p, err := strconv.Atoi(f[0]); err == nil && p > 0 {
			return p
		}
	}
	return 32768
}
