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
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openvpa/openvpa/e2e/framework"
)

// Short leases so that the test sees hand-overs in seconds.
const (
	testLeaseDuration = 4 * time.Second
	testInterval      = 2 * time.Second
)

type component struct {
	name, pkg, serviceAccount, lease string
	// loopLine is logged once per loop at -v=4.
	loopLine string
	extra    []string
}

var replicated = []component{
	{name: "updater", pkg: "./updater", serviceAccount: "kube-system/vpa-updater", lease: "vpa-updater",
		loopLine: "Updater loop done", extra: []string{"--updater-interval=2s"}},
	{name: "recommender", pkg: "./recommender", serviceAccount: "kube-system/vpa-recommender", lease: "vpa-recommender-lease",
		loopLine: "Updated VPAs", extra: []string{"--recommender-interval=2s", "--checkpoints-timeout=5s"}},
}

type replica struct {
	proc   *framework.Process
	health string
}

var acquiredRe = regexp.MustCompile(`"Acquired the leader lease".*identity="([^"]+)"`)

// identity is the leader-election identity the replica acquired the lease
// with, "" when it has not led.
func (r *replica) identity() string {
	m := acquiredRe.FindAllStringSubmatch(r.proc.Log(), -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

func (r *replica) get(path string) (string, error) {
	resp, err := http.Get(r.health + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func (r *replica) probe(path string) error {
	resp, err := http.Get(r.health + path)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s", r.health, path, resp.Status)
	}
	return nil
}

// TestReplicasStayHealthyAndHandOver runs two replicas of the updater and of
// the recommender with --leader-elect, as the shipped Deployments do, with
// the RBAC from deploy/: both replicas stay live and ready for 10 intervals
// (the standby runs no loop); SIGKILL of the leader hands the Lease over
// within the lease duration plus 5 s and the new leader's loop runs; SIGTERM
// of the leader releases the Lease at once, so another replica leads within
// 5 s.
func TestReplicasStayHealthyAndHandOver(t *testing.T) {
	c := framework.Start(t)
	c.InstallCRDs(t)
	for _, comp := range replicated {
		c.ApplyRBAC(t, comp.name)
	}
	for _, comp := range replicated {
		t.Run(comp.name, func(t *testing.T) {
			ns := c.NewNamespace(t)
			binary := c.BuildBinary(t, comp.pkg)
			start := func() *replica {
				port := framework.FreePort(t)
				r := &replica{health: fmt.Sprintf("http://127.0.0.1:%d", port)}
				r.proc = c.RunComponent(t, framework.Component{
					Name:   "vpa-" + comp.name,
					Binary: binary,
					Args: append([]string{
						"--vpa-object-namespace=" + ns,
						fmt.Sprintf("--address=127.0.0.1:%d", port),
						"--leader-elect=true",
						"--leader-elect-lease-duration=" + testLeaseDuration.String(),
						"--leader-elect-renew-deadline=3s",
						"--leader-elect-retry-period=1s",
						"--v=4",
					}, comp.extra...),
					ServiceAccount: comp.serviceAccount,
				})
				return r
			}
			leader := func(rs ...*replica) (*replica, *replica) {
				lease, err := c.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), comp.lease, metav1.GetOptions{})
				if err != nil {
					return nil, nil
				}
				holder := ptr.Deref(lease.Spec.HolderIdentity, "")
				for i, r := range rs {
					if holder != "" && r.identity() == holder {
						return r, rs[1-i]
					}
				}
				return nil, nil
			}
			a, b := start(), start()
			var lead, standby *replica
			framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
				for _, r := range []*replica{a, b} {
					if err := r.probe("/readyz"); err != nil {
						return false, err
					}
				}
				lead, standby = leader(a, b)
				return lead != nil, nil
			})

			for r, want := range map[*replica]string{lead: "1", standby: "0"} {
				line := fmt.Sprintf("leader_election_master_status{name=%q} %s", comp.lease, want)
				framework.WaitFor(t, 10*time.Second, func() (bool, error) {
					body, err := r.get("/metrics")
					return err == nil && strings.Contains(body, line), err
				})
			}

			// Both stay live and ready while the leader runs 10 loops.
			loops := strings.Count(lead.proc.Log(), comp.loopLine)
			framework.WaitFor(t, 20*testInterval, func() (bool, error) {
				for _, r := range []*replica{a, b} {
					for _, path := range []string{"/healthz", "/readyz"} {
						if err := r.probe(path); err != nil {
							t.Fatalf("a replica failed its probe: %v\n%s", err, r.proc.Log())
						}
					}
				}
				return strings.Count(lead.proc.Log(), comp.loopLine) >= loops+10, nil
			})
			if n := strings.Count(standby.proc.Log(), comp.loopLine); n != 0 {
				t.Errorf("the standby ran %d loops", n)
			}

			// SIGKILL: the standby takes over once the lease expires.
			if err := lead.proc.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			framework.WaitFor(t, testLeaseDuration+5*time.Second, func() (bool, error) {
				return standby.identity() != "", nil
			})
			t.Logf("lease handed over %v after SIGKILL", time.Since(killed).Round(100*time.Millisecond))
			framework.WaitFor(t, 5*testInterval, func() (bool, error) {
				return strings.Count(standby.proc.Log(), comp.loopLine) > 0, nil
			})

			// SIGTERM: the leader releases the lease and a new replica leads at once.
			c2 := start()
			framework.WaitFor(t, time.Minute, func() (bool, error) { return c2.probe("/readyz") == nil, nil })
			if err := standby.proc.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			termed := time.Now()
			framework.WaitFor(t, 5*time.Second, func() (bool, error) {
				return c2.identity() != "", nil
			})
			t.Logf("lease handed over %v after SIGTERM", time.Since(termed).Round(100*time.Millisecond))
			if err := standby.proc.Wait(t, 15*time.Second); err != nil {
				t.Errorf("the leader exited with %v after SIGTERM, want status 0", err)
			}
		})
	}
}
