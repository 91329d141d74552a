package framework

import (
	"net"
	"testing"
)

// FreePorts asks the kernel for n distinct unused loopback ports, for
// components a test starts (webhook, metrics and health servers, a second
// control plane).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// FreePort is FreePorts for one port.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePorts(t, 1)[0]
}
