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

// Package lifecycle checks what the three binaries share on the command line
// and at run time: --help in named sections, --logging-format=json, and a
// clean exit on SIGTERM.
package lifecycle

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openvpa/openvpa/e2e/framework"
)

type binary struct {
	name, pkg, rbac, serviceAccount string
	args                            []string
	sections                        []string
}

var binaries = []binary{
	{name: "vpa-recommender", pkg: "./recommender", rbac: "recommender", serviceAccount: "kube-system/vpa-recommender",
		sections: []string{"Recommender flags:", "Estimator flags:", "Model flags:", "Leader election flags:", "Kubernetes client flags:", "Logging flags:"}},
	{name: "vpa-updater", pkg: "./updater", rbac: "updater", serviceAccount: "kube-system/vpa-updater",
		sections: []string{"Updater flags:", "Leader election flags:", "Kubernetes client flags:", "Feature gates flags:", "Logging flags:"}},
	{name: "vpa-admission-controller", pkg: "./admission-controller", rbac: "admission-controller", serviceAccount: "kube-system/vpa-admission-controller",
		args:     []string{"--register-webhook=false"},
		sections: []string{"Admission controller flags:", "Kubernetes client flags:", "Namespaces flags:", "Logging flags:"}},
}

func TestHelpShowsNamedSections(t *testing.T) {
	c := framework.Start(t)
	for _, b := range binaries {
		t.Run(b.name, func(t *testing.T) {
			out, err := exec.Command(c.BuildBinary(t, b.pkg), "--help").CombinedOutput()
			if err != nil {
				t.Fatalf("--help: %v\n%s", err, out)
			}
			for _, s := range b.sections {
				if !strings.Contains(string(out), "\n"+s+"\n") {
					t.Errorf("--help lacks the section %q:\n%s", s, out)
				}
			}
			if !strings.Contains(string(out), "--logging-format") {
				t.Errorf("--help lacks --logging-format")
			}
		})
	}
}

// TestJSONLogsAndSIGTERM runs each binary with --logging-format=json, as its
// ServiceAccount: every line it writes is a JSON object, its own lines carry
// the component's logger name, and SIGTERM ends it with status 0.
func TestJSONLogsAndSIGTERM(t *testing.T) {
	c := framework.Start(t)
	c.InstallCRDs(t)
	for _, b := range binaries {
		c.ApplyRBAC(t, b.rbac)
	}
	for _, b := range binaries {
		t.Run(b.name, func(t *testing.T) {
			ns := c.NewNamespace(t)
			args := append([]string{
				"--logging-format=json",
				"--vpa-object-namespace=" + ns,
				fmt.Sprintf("--address=127.0.0.1:%d", framework.FreePort(t)),
			}, b.args...)
			if b.name == "vpa-admission-controller" {
				args = append(args, fmt.Sprintf("--port=%d", framework.FreePort(t)), "--self-signed-cert-dir="+t.TempDir(),
					"--status-lease-namespace="+ns)
			}
			p := c.RunComponent(t, framework.Component{
				Name: b.name, Binary: c.BuildBinary(t, b.pkg), Args: args, ServiceAccount: b.serviceAccount,
				Env: []string{"NAMESPACE=" + ns},
			})
			framework.WaitFor(t, time.Minute, func() (bool, error) {
				if exited, err := p.Exited(); exited {
					t.Fatalf("%s exited: %v\n%s", b.name, err, p.Log())
				}
				return strings.Contains(p.Log(), `"logger":"`+b.name+`"`), nil
			})
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(t, 30*time.Second); err != nil {
				t.Errorf("exit after SIGTERM: %v, want status 0\n%s", err, p.Log())
			}
			for i, line := range strings.Split(strings.TrimSpace(p.Log()), "\n") {
				var entry map[string]any
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					t.Errorf("line %d is not JSON: %q", i+1, line)
				} else if _, ok := entry["msg"]; !ok {
					t.Errorf("line %d has no msg: %q", i+1, line)
				}
			}
		})
	}
}
