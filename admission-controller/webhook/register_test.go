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

package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/openvpa/openvpa/pkg/kubeclient/kubeclienttest"
)

func TestRegisterCreatesThenUpdatesInPlace(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	reg := Registration{ConfigName: "cfg", URL: "https://127.0.0.1:9443", CABundle: []byte("ca-1"), TimeoutSeconds: 30,
		ExcludedNamespaces: []string{"kube-system", "vpa"}}
	if err := Register(ctx, client.AdmissionregistrationV1().MutatingWebhookConfigurations(), reg); err != nil {
		t.Fatal(err)
	}
	if err := Register(ctx, client.AdmissionregistrationV1().MutatingWebhookConfigurations(), reg); err != nil {
		t.Fatal(err)
	}
	reg.CABundle = []byte("ca-2")
	reg.OnlyNamespace = "team-a"
	if err := Register(ctx, client.AdmissionregistrationV1().MutatingWebhookConfigurations(), reg); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
		if a.GetVerb() == "delete" {
			t.Fatalf("registration deleted the configuration: %v", client.Actions())
		}
	}
	if want := []string{"get", "create", "get", "get", "update"}; len(verbs) != len(want) {
		t.Errorf("verbs %v, want %v", verbs, want)
	}
	cfg, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Webhooks[0]
	if string(w.ClientConfig.CABundle) != "ca-2" || *w.FailurePolicy != admissionregistrationv1.Ignore || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("webhook %+v", w)
	}
	sel := w.NamespaceSelector.MatchExpressions
	if len(sel) != 1 || sel[0].Operator != metav1.LabelSelectorOpIn || sel[0].Values[0] != "team-a" {
		t.Errorf("namespace selector %+v, want In [team-a]", sel)
	}
}

func TestRegistrationNamespaceSelector(t *testing.T) {
	cfg := Registration{ConfigName: "c", ServiceNamespace: "vpa", ServiceName: "vpa-webhook", ExcludedNamespaces: []string{"kube-system", "vpa"}}.Config()
	w := cfg.Webhooks[0]
	if w.ClientConfig.Service == nil || w.ClientConfig.Service.Name != "vpa-webhook" || w.ClientConfig.URL != nil {
		t.Errorf("client config %+v", w.ClientConfig)
	}
	sel := w.NamespaceSelector.MatchExpressions
	if len(sel) != 1 || sel[0].Operator != metav1.LabelSelectorOpNotIn || len(sel[0].Values) != 2 {
		t.Errorf("selector %+v, want NotIn [kube-system vpa]", sel)
	}
}

func TestCertWatcherReloads(t *testing.T) {
	dir := t.TempDir()
	if err := GenerateSelfSigned(dir, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	w, err := NewCertWatcher(filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile), filepath.Join(dir, CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	caChanged := make(chan []byte, 1)
	w.OnCAChange = func(_ context.Context, ca []byte) error { caChanged <- ca; return nil }
	first, _ := w.GetCertificate(&tls.ClientHelloInfo{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Watch(ctx) }()
	// Rotate until the watcher (which may not be watching yet) notices.
	var got []byte
	deadline := time.Now().Add(10 * time.Second)
	for got == nil && time.Now().Before(deadline) {
		if err := GenerateSelfSigned(dir, []string{"127.0.0.1"}, time.Hour); err != nil {
			t.Fatal(err)
		}
		select {
		case got = <-caChanged:
		case <-time.After(time.Second):
		}
	}
	if got == nil {
		t.Fatal("CA change not noticed")
	}
	if newCA, _ := os.ReadFile(filepath.Join(dir, CACertFile)); len(caChanged) == 0 && string(got) != string(newCA) {
		t.Error("OnCAChange got a stale CA")
	}
	cur, _ := w.GetCertificate(&tls.ClientHelloInfo{})
	if string(cur.Certificate[0]) == string(first.Certificate[0]) {
		t.Error("serving certificate not reloaded")
	}
}

// TestCertificateExpiryFollowsReloads checks that the expiry gauge reports
// the NotAfter of the certificate served now, before and after a reload.
func TestCertificateExpiryFollowsReloads(t *testing.T) {
	dir := t.TempDir()
	if err := GenerateSelfSigned(dir, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	w, err := NewCertWatcher(filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile), "")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.ExpiryCollector())
	expiry := func() time.Time {
		mfs, err := reg.Gather()
		if err != nil || len(mfs) != 1 || mfs[0].GetName() != "vpa_admission_controller_certificate_expiry_timestamp_seconds" {
			t.Fatalf("gathered %v, %v; want the expiry gauge", mfs, err)
		}
		return time.Unix(int64(mfs[0].GetMetric()[0].GetGauge().GetValue()), 0)
	}
	if got := time.Until(expiry()); got < 58*time.Minute || got > time.Hour {
		t.Errorf("expiry in %v, want in an hour", got)
	}
	if err := GenerateSelfSigned(dir, []string{"127.0.0.1"}, 30*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	w.reload(context.Background())
	if got := time.Until(expiry()); got < 29*24*time.Hour || got > 30*24*time.Hour {
		t.Errorf("after the reload expiry in %v, want in 30 days", got)
	}
}

func TestTLSConfig(t *testing.T) {
	tests := map[string]struct {
		min, ciphers string
		wantMin      uint16
		wantCiphers  int
		wantErr      bool
	}{
		"defaults":        {wantMin: tls.VersionTLS12},
		"tls1_3":          {min: "tls1_3", wantMin: tls.VersionTLS13},
		"tls1_1 rejected": {min: "tls1_1", wantErr: true},
		"ciphers by comma and colon": {ciphers: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
			wantMin: tls.VersionTLS12, wantCiphers: 3},
		"unknown cipher": {ciphers: "TLS_RSA_WITH_RC4_128_SHA", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := TLSConfig(tc.min, tc.ciphers, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if err == nil && (cfg.MinVersion != tc.wantMin || len(cfg.CipherSuites) != tc.wantCiphers) {
				t.Errorf("min %x ciphers %v", cfg.MinVersion, cfg.CipherSuites)
			}
		})
	}
}

func TestConfigurationsClient(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reply := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{Kind: "MutatingWebhookConfiguration", APIVersion: "admissionregistration.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", ResourceVersion: "7"}}
	s := kubeclienttest.NewServer(t, scheme, 0, reply)
	configs, err := NewConfigurations(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := configs.Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != "7" {
		t.Fatalf("Get = %+v, %v; want the reply decoded", got, err)
	}
	if err := PatchCABundle(ctx, configs, "cfg", []byte("ca")); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/cfg",
		"PATCH /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/cfg application/strategic-merge-patch+json",
	}
	reqs := s.Requests()
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i, r := range reqs {
		got := r.Method + " " + r.Path
		if r.Method == "PATCH" {
			got += " " + r.ContentType
		}
		if got != want[i] {
			t.Errorf("request %d: %s, want %s", i, got, want[i])
		}
	}
}

func TestUnregister(t *testing.T) {
	ours := Registration{ConfigName: "cfg", ServiceNamespace: "vpa", ServiceName: "vpa-webhook", TimeoutSeconds: 5}
	theirs := ours
	theirs.ServiceName = "another-webhook"
	byURL := Registration{ConfigName: "cfg", URL: "https://127.0.0.1:9443"}
	tests := []struct {
		name     string
		existing *admissionregistrationv1.MutatingWebhookConfiguration
		reg      Registration
		conflict bool
		deleted  bool
	}{
		{"ours", ours.Config(), ours, false, true},
		{"ours by URL", byURL.Config(), byURL, false, true},
		{"missing", nil, ours, false, false},
		{"calls another Service", theirs.Config(), ours, false, false},
		{"calls a URL, not our Service", byURL.Config(), ours, false, false},
		{"changed since it was read", ours.Config(), ours, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tc.existing != nil {
				tc.existing.UID = "uid-1"
				tc.existing.ResourceVersion = "7"
				client = fake.NewClientset(tc.existing)
			}
			if tc.conflict {
				client.PrependReactor("delete", "mutatingwebhookconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewConflict(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), "cfg", errors.New("precondition failed"))
				})
			}
			deleted, err := Unregister(context.Background(), client.AdmissionregistrationV1().MutatingWebhookConfigurations(), tc.reg)
			if err != nil {
				t.Fatal(err)
			}
			if deleted != tc.deleted {
				t.Errorf("deleted = %v, want %v", deleted, tc.deleted)
			}
			_, err = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "cfg", metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); tc.existing != nil && gone != tc.deleted {
				t.Errorf("configuration gone = %v, want %v", gone, tc.deleted)
			}
			for _, a := range client.Actions() {
				if d, ok := a.(clienttesting.DeleteActionImpl); ok {
					p := d.DeleteOptions.Preconditions
					if p == nil || p.UID == nil || *p.UID != "uid-1" || p.ResourceVersion == nil || *p.ResourceVersion != "7" {
						t.Errorf("delete preconditions %+v, want the UID and resourceVersion read", p)
					}
				}
			}
		})
	}
}
