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

package leaderelection

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openvpa/openvpa/admission-controller/webhook"
	"github.com/openvpa/openvpa/e2e/framework"
)

// TestAdmissionControllerReplicasServeTogether runs two replicas of the
// admission controller with the RBAC from deploy/, as the shipped
// Deployment does. The admission controller elects no leader (nor does
// upstream's): every replica serves the webhook and renews the status Lease
// the updater reads. Both stay live and ready and answer reviews for 10
// Lease intervals; after SIGKILL of one, the other still answers and keeps
// the Lease fresh within two intervals; SIGTERM ends the other with status 0.
func TestAdmissionControllerReplicasServeTogether(t *testing.T) {
	const interval = time.Second
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "admission-controller")
	ns := c.NewNamespace(t)
	binary := c.BuildBinary(t, "./admission-controller")
	certDir := t.TempDir()
	if err := webhook.GenerateSelfSigned(certDir, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(certDir, webhook.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	type acReplica struct {
		replica
		webhook string
	}
	start := func() *acReplica {
		ports := framework.FreePorts(t, 2)
		r := &acReplica{replica: replica{health: fmt.Sprintf("http://127.0.0.1:%d", ports[1])}, webhook: fmt.Sprintf("https://127.0.0.1:%d/", ports[0])}
		r.proc = c.RunComponent(t, framework.Component{
			Name:   "vpa-admission-controller",
			Binary: binary,
			Args: []string{
				"--port=" + strconv.Itoa(ports[0]),
				fmt.Sprintf("--address=127.0.0.1:%d", ports[1]),
				"--register-webhook=false",
				"--vpa-object-namespace=" + ns,
				"--client-ca-file=" + filepath.Join(certDir, webhook.CACertFile),
				"--tls-cert-file=" + filepath.Join(certDir, webhook.ServerCertFile),
				"--tls-private-key=" + filepath.Join(certDir, webhook.ServerKeyFile),
				"--status-lease-namespace=" + ns,
				"--status-lease-update-interval=" + interval.String(),
			},
			ServiceAccount: "kube-system/vpa-admission-controller",
			Env:            []string{"NAMESPACE=kube-system"},
		})
		return r
	}
	// review sends a pod creation review; a pod no VPA controls is allowed
	// unchanged.
	review := func(r *acReplica, uid string) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img"}}}}
		resp, err := framework.ReviewPodCreation(client, r.webhook, uid, pod)
		if err != nil {
			return err
		}
		if !resp.Allowed || resp.Patch != nil {
			return fmt.Errorf("%s: response %+v, want uid %s allowed without a patch", r.webhook, resp, uid)
		}
		return nil
	}
	renewed := func() (time.Time, string) {
		l, err := c.Client.CoordinationV1().Leases(ns).Get(context.Background(), "vpa-admission-controller", metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return time.Time{}, ""
		}
		return l.Spec.RenewTime.Time, ptr.Deref(l.Spec.HolderIdentity, "")
	}

	a, b := start(), start()
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		for _, r := range []*acReplica{a, b} {
			if err := r.probe("/readyz"); err != nil {
				return false, err
			}
		}
		return true, nil
	})

	// Both live, ready and serving while the Lease is renewed 10 times.
	first, _ := renewed()
	n := 0
	framework.WaitFor(t, 30*interval, func() (bool, error) {
		for i, r := range []*acReplica{a, b} {
			for _, path := range []string{"/healthz", "/readyz"} {
				if err := r.probe(path); err != nil {
					t.Fatalf("a replica failed its probe: %v\n%s", err, r.proc.Log())
				}
			}
			n++
			if err := review(r, fmt.Sprintf("uid-%d-%d", i, n)); err != nil {
				t.Fatalf("a replica did not serve: %v\n%s", err, r.proc.Log())
			}
		}
		last, _ := renewed()
		return !first.IsZero() && last.Sub(first) >= 10*interval, nil
	})

	// SIGKILL of one: the other serves and keeps the Lease fresh.
	if err := a.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The first renewal seen after the kill is the one measured; reading
	// the Lease again later could see a renewal one interval on.
	var at time.Time
	var holder string
	framework.WaitFor(t, 10*interval, func() (bool, error) {
		if err := review(b, fmt.Sprintf("after-kill-%d", time.Now().UnixNano())); err != nil {
			return false, err
		}
		at, holder = renewed()
		return at.After(killed), nil
	})
	if gap := at.Sub(killed); gap > 2*interval {
		t.Errorf("the Lease was renewed %v after the kill, want within two intervals", gap)
	}
	t.Logf("Lease renewed by %s %v after SIGKILL of the other replica", holder, at.Sub(killed).Round(10*time.Millisecond))

	if err := b.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.proc.Wait(t, 15*time.Second); err != nil {
		t.Errorf("the admission controller exited with %v after SIGTERM, want status 0", err)
	}
}
