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

// Package kubeclienttest is a fake API server for unit tests of the lean
// clients: it records each request, decodes its body and answers with a
// fixed status and JSON body.
package kubeclienttest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Request is one request the Server received.
type Request struct {
	Method, Path, ContentType string
	// Query is the request's query string, unescaped.
	Query string
	// Body is the decoded object of a POST or PUT (nil for patches and
	// bodies the scheme does not know).
	Body runtime.Object
	Raw  []byte
}

// Server is the fake API server.
type Server struct {
	t       testing.TB
	decoder runtime.Decoder
	srv     *httptest.Server

	mu       sync.Mutex
	requests []Request
	status   int
	reply    any
}

// NewServer starts a Server that decodes request bodies with scheme's kinds
// and answers every request with status (200 if zero) and reply as JSON.
// It stops when the test ends.
func NewServer(t testing.TB, scheme *runtime.Scheme, status int, reply any) *Server {
	t.Helper()
	s := &Server{t: t, decoder: serializer.NewCodecFactory(scheme).UniversalDeserializer(), status: status, reply: reply}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// Config is a client configuration for the server, not rate-limited.
func (s *Server) Config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, QPS: 1000, Burst: 1000}
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("%s %s: reading the body: %v", r.Method, r.URL.Path, err)
	}
	req := Request{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Raw: raw}
	if q, err := url.QueryUnescape(r.URL.RawQuery); err == nil {
		req.Query = q
	}
	if len(raw) > 0 && (r.Method == http.MethodPost || r.Method == http.MethodPut) {
		if obj, _, err := s.decoder.Decode(raw, nil, nil); err == nil {
			req.Body = obj
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	status, reply := s.status, s.reply
	s.mu.Unlock()
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(reply)
}
