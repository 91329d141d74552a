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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a CA that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) clientCert(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestClientCertificates: with a client CA file, only clients presenting a
// certificate of that CA are served.
func TestClientCertificates(t *testing.T) {
	trusted, other := newTestCA(t, "apiserver-client-ca"), newTestCA(t, "other")
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	if err := os.WriteFile(caFile, trusted.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startTLSServerWith(t, HTTPOptions{ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second}, TLSOptions{ClientCAFile: caFile})
	body := strings.Replace(podReview, "%s", "admission.k8s.io/v1", 1)
	tests := map[string]struct {
		certs  []tls.Certificate
		served bool
	}{
		"certificate of the client CA": {certs: []tls.Certificate{trusted.clientCert(t, "kube-apiserver")}, served: true},
		"no certificate":               {},
		"certificate of another CA":    {certs: []tls.Certificate{other.clientCert(t, "kube-apiserver")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.roots, Certificates: tc.certs, MinVersion: tls.VersionTLS12}}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Post("https://"+ts.addr, "application/json", strings.NewReader(body))
			if err == nil {
				resp.Body.Close()
			}
			switch {
			case tc.served && (err != nil || resp.StatusCode != http.StatusOK):
				t.Errorf("not served: %v", err)
			case !tc.served && err == nil:
				t.Errorf("served with status %d", resp.StatusCode)
			}
		})
	}
}

func TestServerTLSConfigClientCAErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"missing": filepath.Join(dir, "missing.pem"), "no PEM": empty} {
		t.Run(name, func(t *testing.T) {
			if _, err := ServerTLSConfig(TLSOptions{ClientCAFile: file}, nil); err == nil {
				t.Error("no error")
			}
		})
	}
	cfg, err := ServerTLSConfig(TLSOptions{}, nil)
	if err != nil || cfg.ClientAuth != tls.NoClientCert {
		t.Errorf("without a client CA file: %v, client auth %v", err, cfg.ClientAuth)
	}
}
