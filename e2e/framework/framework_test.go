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
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	testingclock "k8s.io/utils/clock/testing"
)

func TestNamespaceName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	tests := []struct {
		name, testName, prefix string
	}{
		{name: "simple", testName: "TestResize", prefix: "e2e-testresize-"},
		{name: "subtest", testName: "TestCluster/top_pods", prefix: "e2e-testcluster-top-pods-"},
		{name: "long", testName: strings.Repeat("TestVeryLongName", 10), prefix: "e2e-testverylongname"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := namespaceName(tc.testName)
			if !strings.HasPrefix(got, tc.prefix) {
				t.Errorf("namespaceName(%q) = %q, want prefix %q", tc.testName, got, tc.prefix)
			}
			if len(got) > 63 || !valid.MatchString(got) {
				t.Errorf("namespaceName(%q) = %q is not a valid namespace name", tc.testName, got)
			}
			if again := namespaceName(tc.testName); again == got {
				t.Errorf("namespaceName(%q) returned %q twice", tc.testName, got)
			}
		})
	}
}

func TestReadEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.env")
	content := "# comment\n\nBIN_DIR=/cache/bin\nAPISERVER_PORT=6443\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["BIN_DIR"] != "/cache/bin" || got["APISERVER_PORT"] != "6443" {
		t.Errorf("readEnvFile = %v", got)
	}
	if err := os.WriteFile(path, []byte("no equals sign\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readEnvFile(path); err == nil {
		t.Error("readEnvFile accepted a malformed line")
	}
}

func TestPoll(t *testing.T) {
	errTransient := errors.New("not yet")
	tests := []struct {
		name      string
		results   []error // nil: condition true; non-nil: returned as the error
		wantErr   bool
		wantLast  error
		wantCalls int
	}{
		{name: "true at once", results: []error{nil}, wantCalls: 1},
		{name: "errors retried", results: []error{errTransient, errTransient, nil}, wantCalls: 3},
		// Checked at 0, 1, …, 49 ms: the next check would be at the deadline.
		{name: "deadline reports last error", results: []error{errTransient}, wantErr: true, wantLast: errTransient, wantCalls: 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			// A fake clock that each wait moves on: the test does not depend
			// on how quickly a loaded machine schedules it.
			clk := testingclock.NewFakeClock(time.Unix(0, 0))
			err := poll(clk, 50*time.Millisecond, time.Millisecond, func() (bool, error) {
				i := min(calls, len(tc.results)-1)
				calls++
				if tc.results[i] != nil {
					return false, tc.results[i]
				}
				return true, nil
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("poll() error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantLast != nil && !errors.Is(err, tc.wantLast) {
				t.Errorf("poll() error = %v, want it to wrap %v", err, tc.wantLast)
			}
			if tc.wantCalls > 0 && calls != tc.wantCalls {
				t.Errorf("condition called %d times, want %d", calls, tc.wantCalls)
			}
		})
	}
}

// TestPollTrueWithError: a condition written as `return done, err` with err
// set while done is true would otherwise poll until the deadline and report
// its own error as the reason; it fails on the first call instead.
func TestPollTrueWithError(t *testing.T) {
	errMistake := errors.New("no checkpoint yet")
	calls := 0
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	err := poll(clk, 50*time.Millisecond, time.Millisecond, func() (bool, error) {
		calls++
		return true, errMistake
	})
	if err == nil || !errors.Is(err, errMistake) {
		t.Fatalf("poll() error = %v, want one wrapping %v", err, errMistake)
	}
	var timeout *TimeoutError
	if errors.As(err, &timeout) {
		t.Errorf("poll() error = %v, want it at once, not a timeout", err)
	}
	if calls != 1 {
		t.Errorf("condition called %d times, want 1", calls)
	}
}

func TestWriteImpersonatingKubeconfig(t *testing.T) {
	dir := t.TempDir()
	admin := filepath.Join(dir, "admin")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, admin); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sa")
	user := ServiceAccountUser("kube-system", "vpa-recommender")
	if err := writeImpersonatingKubeconfig(admin, out, user); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", out)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Impersonate.UserName != "system:serviceaccount:kube-system:vpa-recommender" {
		t.Errorf("impersonated user = %q", rc.Impersonate.UserName)
	}
	if string(rc.CertData) != "cert" || rc.Host != "https://127.0.0.1:6443" {
		t.Errorf("kubeconfig lost the admin credentials or server: host %q cert %q", rc.Host, rc.CertData)
	}
}

func TestWorkloadPodTemplate(t *testing.T) {
	tests := []struct {
		name            string
		workload        Workload
		wantAnnotations map[string]string
		wantContainers  int
	}{
		{
			name:            "defaults",
			workload:        Workload{Name: "web"},
			wantAnnotations: map[string]string{},
			wantContainers:  1,
		},
		{
			name: "usage and readiness delay",
			workload: Workload{
				Name:       "web",
				Usage:      Usage{CPU: "250m", Memory: "100Mi"},
				ReadyAfter: 4 * time.Second,
				Containers: []Container{{Name: "a"}, {Name: "b", Limits: Resources("", "200Mi")}},
			},
			wantAnnotations: map[string]string{
				AnnotationUsageCPU:    "250m",
				AnnotationUsageMemory: "100Mi",
				AnnotationReadyDelay:  "4s",
			},
			wantContainers: 2,
		},
		{
			name:            "explicit annotation wins",
			workload:        Workload{Name: "web", Usage: Usage{CPU: "1"}, Annotations: map[string]string{AnnotationUsageCPU: "2", AnnotationResize: ResizeInfeasible}},
			wantAnnotations: map[string]string{AnnotationUsageCPU: "2", AnnotationResize: ResizeInfeasible},
			wantContainers:  1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pt := tc.workload.PodTemplate()
			if pt.Labels["app"] != tc.workload.Name {
				t.Errorf("app label = %q, want %q", pt.Labels["app"], tc.workload.Name)
			}
			if len(pt.Annotations) != len(tc.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", pt.Annotations, tc.wantAnnotations)
			}
			for k, v := range tc.wantAnnotations {
				if pt.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, pt.Annotations[k], v)
				}
			}
			if len(pt.Spec.Containers) != tc.wantContainers {
				t.Errorf("%d containers, want %d", len(pt.Spec.Containers), tc.wantContainers)
			}
		})
	}

	d := Workload{Name: "web", Replicas: 3}.Deployment("ns")
	if *d.Spec.Replicas != 3 || d.Namespace != "ns" || d.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("Deployment() = %+v", d.Spec)
	}
	p := Workload{Name: "one"}.Pod("ns")
	if p.Name != "one" || p.Namespace != "ns" || p.Spec.Containers[0].Resources.Requests.Cpu().String() != "100m" {
		t.Errorf("Pod() = %+v", p)
	}
}

func TestResources(t *testing.T) {
	rl := Resources("", "1Gi")
	if _, ok := rl[corev1.ResourceCPU]; ok {
		t.Error("empty CPU should be left out")
	}
	if rl.Memory().String() != "1Gi" {
		t.Errorf("memory = %s", rl.Memory())
	}
}

func TestFreePorts(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		for _, p := range FreePorts(t, 5) {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
			if p < portsFrom || p >= min(ephemeralStart(), nodePortsFrom) {
				t.Errorf("port %d outside [%d, %d)", p, portsFrom, min(ephemeralStart(), nodePortsFrom))
			}
		}
	}
	if len(seen) != 100 {
		t.Fatalf("%d ports, want 100", len(seen))
	}
	for p := range seen {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("a handed-out port does not bind: %v", err)
		}
		l.Close()
		// Another process (here, another open file description) cannot take its lock.
		f, err := os.Open(filepath.Join(ports.dir, strconv.Itoa(p)+".lock"))
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close()
		if err != syscall.EWOULDBLOCK {
			t.Fatalf("a second lock on port %d: %v, want EWOULDBLOCK", p, err)
		}
	}
}
