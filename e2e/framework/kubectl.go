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
	"strings"
	"testing"
	"time"
)

// kubectlTimeout bounds one kubectl call so a hung command cannot stall the test binary.
const kubectlTimeout = 2 * time.Minute

// Kubectl runs the cluster's kubectl as admin and returns its standard output; the test fails if
// kubectl fails. Use it for what users see (kubectl top, get with printer columns, describe);
// use the clients for everything else.
func (c *Cluster) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.KubectlE(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// KubectlE is Kubectl returning the error (with kubectl's standard error) instead of failing.
func (c *Cluster) KubectlE(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.KubectlPath, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.KubeconfigPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}
