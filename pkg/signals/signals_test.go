package signals

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestSecondSignalExits(t *testing.T) {
	c := make(chan os.Signal, 2)
	exited := make(chan struct{})
	ctx := contextWith(c, func() { close(exited) })
	c <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first signal did not cancel the context")
	}
	select {
	case <-exited:
		t.Fatal("the first signal exited the process")
	default:
	}
	c <- syscall.SIGTERM
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not exit the process")
	}
}
