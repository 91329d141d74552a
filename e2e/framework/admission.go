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
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/admission-controller/webhook"
)

// StartScopedAdmission runs the admission controller as its ServiceAccount
// for the VPAs of namespace ns only, registered by URL under a webhook
// configuration of its own (vpa-webhook-<ns>, deleted when the test ends)
// and renewing its status Lease in ns, with extra flags after the common
// ones; it waits until the controller is ready and registered. The
// ServiceAccount's RBAC must be applied (ApplyRBAC "admission-controller").
func (c *Cluster) StartScopedAdmission(t testing.TB, ns string, extra ...string) *Process {
	t.Helper()
	certDir := t.TempDir()
	if err := webhook.GenerateSelfSigned(certDir, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	config := "vpa-webhook-" + ns
	c.AllowWebhookConfig(t, config)
	t.Cleanup(func() {
		_ = c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), config, metav1.DeleteOptions{})
	})
	port, healthPort := FreePort(t), FreePort(t)
	proc := c.RunComponent(t, Component{
		Name:   "vpa-admission-controller",
		Binary: c.BuildBinary(t, "./admission-controller"),
		Args: append([]string{
			"--port=" + strconv.Itoa(port),
			fmt.Sprintf("--address=127.0.0.1:%d", healthPort),
			"--register-by-url", "--webhook-address=https://127.0.0.1", "--webhook-port=" + strconv.Itoa(port),
			"--webhook-config-name=" + config,
			"--webhook-timeout-seconds=5",
			"--vpa-object-namespace=" + ns,
			"--client-ca-file=" + filepath.Join(certDir, webhook.CACertFile),
			"--tls-cert-file=" + filepath.Join(certDir, webhook.ServerCertFile),
			"--tls-private-key=" + filepath.Join(certDir, webhook.ServerKeyFile),
			"--status-lease-namespace=" + ns,
			"--v=4",
		}, extra...),
		ServiceAccount: "kube-system/vpa-admission-controller",
		Env:            []string{"NAMESPACE=kube-system"},
	})
	WaitFor(t, time.Minute, func() (bool, error) {
		if exited, err := proc.Exited(); exited {
			return false, fmt.Errorf("admission controller exited: %v", err)
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, nil
		}
		_, err = c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), config, metav1.GetOptions{})
		return err == nil, nil
	})
	return proc
}
