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
