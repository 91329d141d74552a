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

package options

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaults(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	want := map[string]string{
		"client-ca-file":                "/etc/tls-certs/caCert.pem",
		"tls-client-ca-file":            "",
		"tls-cert-file":                 "/etc/tls-certs/serverCert.pem",
		"tls-private-key":               "/etc/tls-certs/serverKey.pem",
		"reload-cert":                   "false",
		"tls-ciphers":                   "",
		"min-tls-version":               "tls1_2",
		"port":                          "8000",
		"address":                       ":8944",
		"webhook-service":               "vpa-webhook",
		"read-timeout":                  "10s",
		"write-timeout":                 "30s",
		"idle-timeout":                  "2m0s",
		"register-webhook":              "true",
		"register-by-url":               "false",
		"webhook-address":               "",
		"webhook-port":                  "",
		"webhook-timeout-seconds":       "30",
		"webhook-failure-policy-fail":   "false",
		"webhook-labels":                "",
		"webhook-config-name":           "vpa-webhook-config",
		"max-allowed-cpu-boost":         "",
		"shutdown-drain-timeout":        "20s",
		"status-lease-name":             "vpa-admission-controller",
		"status-lease-namespace":        "",
		"status-lease-update-interval":  "10s",
		"kube-api-qps":                  "50",
		"kube-api-burst":                "100",
		"profiling":                     "false",
		"vpa-object-namespace":          "",
		"ignored-vpa-object-namespaces": "",
		"feature-gates":                 "",
		"kubeconfig":                    "",
		"v":                             "4",
		"stderrthreshold":               "0",
	}
	for name, def := range want {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s missing", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s default = %q, want %q", name, f.DefValue, def)
		}
	}
	if errs := o.Validate(); len(errs) > 0 {
		t.Errorf("defaults do not validate: %v", errs)
	}
}

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"tls1_3":               {args: []string{"--min-tls-version=tls1_3"}},
		"bad tls version":      {args: []string{"--min-tls-version=tls1_1"}, wantErr: "--min-tls-version"},
		"url without address":  {args: []string{"--register-by-url"}, wantErr: "--webhook-address"},
		"bad labels":           {args: []string{"--webhook-labels=a"}, wantErr: "--webhook-labels"},
		"both namespace flags": {args: []string{"--vpa-object-namespace=a", "--ignored-vpa-object-namespaces=b"}, wantErr: "mutually exclusive"},
		"bad boost":            {args: []string{"--max-allowed-cpu-boost=lots"}, wantErr: "--max-allowed-cpu-boost"},
		"zero lease interval":  {args: []string{"--status-lease-update-interval=0s"}, wantErr: "--status-lease-update-interval"},
		"zero read timeout":    {args: []string{"--read-timeout=0s"}, wantErr: "--read-timeout"},
		"negative write":       {args: []string{"--write-timeout=-1s"}, wantErr: "--write-timeout"},
		"zero idle timeout":    {args: []string{"--idle-timeout=0s"}, wantErr: "--idle-timeout"},
		"no shutdown drain":    {args: []string{"--shutdown-drain-timeout=0s"}},
		"negative drain":       {args: []string{"--shutdown-drain-timeout=-1s"}, wantErr: "--shutdown-drain-timeout"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			errs := o.Validate()
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			joined := strings.Join(msgs, "; ")
			if tc.wantErr == "" && len(errs) > 0 || tc.wantErr != "" && !strings.Contains(joined, tc.wantErr) {
				t.Errorf("errors %q, want %q", joined, tc.wantErr)
			}
		})
	}
}

func TestWebhookURLAndLabels(t *testing.T) {
	o := NewOptions()
	o.WebhookAddress, o.WebhookPort = "127.0.0.1", "8443"
	if got := o.WebhookURL(); got != "https://127.0.0.1:8443" {
		t.Errorf("URL = %q", got)
	}
	o.WebhookLabels = "a:1, b:2"
	l, err := o.Labels()
	if err != nil || l["a"] != "1" || l["b"] != "2" {
		t.Errorf("labels = %v, %v", l, err)
	}
	o.ReadTimeout = 2 * time.Second
	if h := o.HTTPOptions(); h.ReadTimeout != 2*time.Second || h.ReadHeaderTimeout != 2*time.Second || h.WriteTimeout != 30*time.Second || h.IdleTimeout != 2*time.Minute {
		t.Errorf("HTTP options %+v", h)
	}
	o.StatusLeaseUpdateInterval = time.Second
	o.Namespace = "vpa"
	if o.LeaseNamespace() != "vpa" {
		t.Errorf("lease namespace = %q", o.LeaseNamespace())
	}
}
