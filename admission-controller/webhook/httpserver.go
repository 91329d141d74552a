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
	"log"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// HTTPOptions bound the time a client may hold a connection of the webhook
// server.
type HTTPOptions struct {
	// ReadTimeout bounds reading one request, headers and body; it also
	// bounds the TLS handshake.
	ReadTimeout time.Duration
	// ReadHeaderTimeout bounds reading the headers; zero means ReadTimeout.
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers to
	// the end of the response: admitting the request and writing the
	// answer.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request.
	IdleTimeout time.Duration
	// ErrorLog receives net/http's connection errors (failed TLS
	// handshakes and the like); nil means the logger of the context,
	// sampled, as anyone who can reach the port can cause them.
	ErrorLog *log.Logger
}

// Default timeouts. The API server sends a review in one write and waits at
// most 30 seconds (the largest webhook timeout) for the answer; its
// connections idle for up to 90 seconds, so the server waits longer than
// that before closing an idle one itself.
const (
	DefaultReadTimeout       = 10 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

// MaxHeaderBytes bounds the request headers; the API server sends a few
// hundred bytes.
const MaxHeaderBytes = 64 << 10

// NewHTTPServer returns the http.Server that serves h over TLS with the
// timeouts of o, logging connection errors to ctx's logger.
func NewHTTPServer(ctx context.Context, h http.Handler, tlsConfig *tls.Config, o HTTPOptions) *http.Server {
	if o.ErrorLog == nil {
		o.ErrorLog = log.New(&connectionLog{logger: klog.FromContext(ctx), sampled: newSampledLog(clock.RealClock{}, DecodeLogInterval)}, "", 0)
	}
	header := o.ReadHeaderTimeout
	if header == 0 {
		header = o.ReadTimeout
	}
	return &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadTimeout:       o.ReadTimeout,
		ReadHeaderTimeout: header,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          o.ErrorLog,
	}
}

// connectionLog writes net/http's error lines to a logger, at most one per
// interval.
type connectionLog struct {
	logger  klog.Logger
	sampled *sampledLog
}

func (l *connectionLog) Write(p []byte) (int, error) {
	l.sampled.Error(l.logger, errors.New(strings.TrimSpace(string(p))), "Webhook connection error")
	return len(p), nil
}
