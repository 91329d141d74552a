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
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// TLSConfig returns the server TLS configuration: minVersion is "tls1_2"
// (default when empty) or "tls1_3"; ciphers is a list of Go cipher suite
// names separated by "," or ":" (empty means Go's defaults). getCert serves
// the certificate.
func TLSConfig(minVersion, ciphers string, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) (*tls.Config, error) {
	cfg := &tls.Config{GetCertificate: getCert}
	switch minVersion {
	case "", "tls1_2":
		cfg.MinVersion = tls.VersionTLS12
	case "tls1_3":
		cfg.MinVersion = tls.VersionTLS13
	default:
		return nil, fmt.Errorf("--min-tls-version %q not supported: use tls1_2 or tls1_3", minVersion)
	}
	if ciphers != "" {
		byName := map[string]uint16{}
		for _, c := range tls.CipherSuites() {
			byName[c.Name] = c.ID
		}
		for _, name := range strings.FieldsFunc(ciphers, func(r rune) bool { return r == ',' || r == ':' }) {
			id, ok := byName[strings.TrimSpace(name)]
			if !ok {
				return nil, fmt.Errorf("--tls-ciphers: unknown or insecure cipher suite %q", name)
			}
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	return cfg, nil
}

// TLSOptions configure the webhook server's TLS.
type TLSOptions struct {
	// MinVersion is "tls1_2" (the default when empty) or "tls1_3".
	MinVersion string
	// Ciphers is a list of Go cipher suite names separated by "," or ":";
	// empty means Go's defaults.
	Ciphers string
	// ClientCAFile, when set, makes the server require a client certificate
	// signed by one of the CAs in this PEM file (the API server presents
	// one when its AdmissionConfiguration gives it a kubeconfig for the
	// webhook), and refuse connections without one.
	ClientCAFile string
}

// ServerTLSConfig returns the server TLS configuration for o; getCert serves
// the certificate.
func ServerTLSConfig(o TLSOptions, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) (*tls.Config, error) {
	cfg, err := TLSConfig(o.MinVersion, o.Ciphers, getCert)
	if err != nil {
		return nil, err
	}
	if o.ClientCAFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(o.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the client CA file %s holds no PEM certificate", o.ClientCAFile)
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	return cfg, nil
}

// CertWatcher holds the serving certificate loaded from files, and reloads it
// (and re-reads the CA file) when the files change.
type CertWatcher struct {
	certFile, keyFile, caFile string
	cert                      atomic.Pointer[tls.Certificate]
	ca                        atomic.Pointer[[]byte]
	// OnCAChange is called with the new CA bundle when the CA file's content
	// changes. It must be set before Watch.
	OnCAChange func(ctx context.Context, ca []byte) error
	mu         sync.Mutex
}

// NewCertWatcher loads the key pair (and the CA file, when caFile is not
// empty) once.
func NewCertWatcher(certFile, keyFile, caFile string) (*CertWatcher, error) {
	w := &CertWatcher{certFile: certFile, keyFile: keyFile, caFile: caFile}
	if err := w.loadCert(); err != nil {
		return nil, err
	}
	if caFile != "" {
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading the CA file: %w", err)
		}
		w.ca.Store(&ca)
	}
	return w, nil
}

func (w *CertWatcher) loadCert() error {
	c, err := tls.LoadX509KeyPair(w.certFile, w.keyFile)
	if err != nil {
		return fmt.Errorf("loading the serving certificate %s and key %s: %w", w.certFile, w.keyFile, err)
	}
	w.cert.Store(&c)
	return nil
}

// ExpiryCollector returns the gauge
// vpa_admission_controller_certificate_expiry_timestamp_seconds: the NotAfter
// of the serving certificate the watcher holds now, in seconds since the
// epoch, read at every scrape so that it follows reloads.
func (w *CertWatcher) ExpiryCollector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "certificate_expiry_timestamp_seconds",
		Help: "Expiry (NotAfter) of the webhook's serving certificate, in seconds since the epoch.",
	}, func() float64 {
		leaf, err := leafOf(w.cert.Load())
		if err != nil {
			return 0
		}
		return float64(leaf.NotAfter.Unix())
	})
}

// leafOf returns the parsed leaf of c.
func leafOf(c *tls.Certificate) (*x509.Certificate, error) {
	if c == nil || len(c.Certificate) == 0 {
		return nil, errors.New("no serving certificate loaded")
	}
	if c.Leaf != nil {
		return c.Leaf, nil
	}
	return x509.ParseCertificate(c.Certificate[0])
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (w *CertWatcher) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := w.cert.Load()
	if c == nil {
		return nil, errors.New("no serving certificate loaded")
	}
	return c, nil
}

// CA returns the CA bundle last read.
func (w *CertWatcher) CA() []byte {
	if p := w.ca.Load(); p != nil {
		return *p
	}
	return nil
}

// Loaded reports (for readiness) whether a certificate is loaded.
func (w *CertWatcher) Loaded() error {
	if w.cert.Load() == nil {
		return errors.New("serving certificate not loaded")
	}
	return nil
}

// Watch reloads the files on change until ctx ends. It watches the files'
// directories, so files replaced by rename (as Secret volumes and
// atomic writers do) are picked up too.
func (w *CertWatcher) Watch(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching certificate files: %w", err)
	}
	defer fw.Close()
	dirs := map[string]bool{}
	for _, f := range []string{w.certFile, w.keyFile, w.caFile} {
		if f == "" {
			continue
		}
		d := filepath.Dir(f)
		if !dirs[d] {
			if err := fw.Add(d); err != nil {
				return fmt.Errorf("watching %s: %w", d, err)
			}
			dirs[d] = true
		}
	}
	// Changes come in bursts (cert, then key); reload once they settle.
	var pending <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
				pending = time.After(100 * time.Millisecond)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			logger.Error(err, "Watching certificate files")
		case <-pending:
			pending = nil
			w.reload(ctx)
		}
	}
}

func (w *CertWatcher) reload(ctx context.Context) {
	logger := klog.FromContext(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.cert.Load()
	if err := w.loadCert(); err != nil {
		// A half-written pair is common during rotation; keep the old one.
		logger.V(2).Info("Certificate files not loadable yet; keeping the current certificate", "err", err.Error())
	} else if c := w.cert.Load(); old == nil || len(old.Certificate) == 0 || string(old.Certificate[0]) != string(c.Certificate[0]) {
		logger.Info("Reloaded the serving certificate", "certFile", w.certFile)
	}
	if w.caFile == "" {
		return
	}
	ca, err := os.ReadFile(w.caFile)
	if err != nil || len(ca) == 0 {
		return
	}
	if string(ca) == string(w.CA()) {
		return
	}
	w.ca.Store(&ca)
	logger.Info("CA file changed", "caFile", w.caFile)
	if w.OnCAChange != nil {
		if err := w.OnCAChange(ctx, ca); err != nil {
			logger.Error(err, "Updating the webhook's CA bundle")
		}
	}
}
