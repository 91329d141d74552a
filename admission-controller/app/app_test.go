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

package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openvpa/openvpa/pkg/component/componenttest"
)

func TestMain(m *testing.M) {
	componenttest.Main(m, func(ctx context.Context, args []string) int {
		return NewCommand().Execute(ctx, args, os.Stdout, os.Stderr)
	})
}

// TestStartupFailures: the error the admission controller exits on is JSON
// with --logging-format=json, and "vpa-admission-controller: <error>" in the
// text format.
func TestStartupFailures(t *testing.T) {
	dir := t.TempDir()
	config := componenttest.Kubeconfig(t, dir)
	missingCert := []string{
		"--kubeconfig=" + config,
		"--tls-cert-file=" + filepath.Join(dir, "missing-cert.pem"),
		"--tls-private-key=" + filepath.Join(dir, "missing-key.pem"),
		"--client-ca-file=" + filepath.Join(dir, "missing-ca.pem"),
	}
	componenttest.CheckFailures(t, Name, map[string]componenttest.Failure{
		"json, missing certificate": {JSON: true, Args: missingCert, WantErr: "loading the serving certificate " + filepath.Join(dir, "missing-cert.pem")},
		"json, missing kubeconfig":  {JSON: true, Args: []string{"--kubeconfig=/nonexistent"}, WantErr: "stat /nonexistent"},
		"json, invalid flag value":  {JSON: true, Args: []string{"--port=0", "--min-tls-version=tls1_1"}, WantErr: "--port must be in 1..65535, got 0"},
		"text, missing certificate": {Args: missingCert, WantErr: "loading the serving certificate"},
		"text, invalid flag value":  {Args: []string{"--webhook-timeout-seconds=31"}, WantErr: "--webhook-timeout-seconds must be in 1..30, got 31"},
	})
}

// TestKlogFileFlags: upstream's klog flags, --log-file among them, are taken
// and write the admission controller's log to the file.
func TestKlogFileFlags(t *testing.T) {
	dir := t.TempDir()
	config := componenttest.Kubeconfig(t, dir)
	componenttest.CheckLogFile(t, Name, "loading the serving certificate", "--kubeconfig="+config,
		"--tls-cert-file="+filepath.Join(dir, "missing-cert.pem"), "--tls-private-key="+filepath.Join(dir, "missing-key.pem"),
		"--client-ca-file="+filepath.Join(dir, "missing-ca.pem"))
}

// TestVersion: --version prints the binary's name and version and exits 0.
func TestVersion(t *testing.T) {
	componenttest.CheckVersion(t, Name)
}

// TestCloseWhenShuttingDown: once shutting down, every response tells the
// client to close its connection, so the API server's next review goes out
// on a new connection, to a ready pod; before, connections are kept alive.
func TestCloseWhenShuttingDown(t *testing.T) {
	var closing atomic.Bool
	srv := httptest.NewServer(closeWhenShuttingDown(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}), &closing))
	defer srv.Close()
	for _, tc := range []struct {
		closing   bool
		wantClose bool
	}{{false, false}, {true, true}} {
		closing.Store(tc.closing)
		resp, err := srv.Client().Post(srv.URL, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.Close != tc.wantClose {
			t.Errorf("closing=%v: response asks to close the connection: %v, want %v", tc.closing, resp.Close, tc.wantClose)
		}
	}
}
