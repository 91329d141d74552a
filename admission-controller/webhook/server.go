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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	sigsjson "sigs.k8s.io/json"

	"github.com/openvpa/openvpa/admission-controller/pod"
	"github.com/openvpa/openvpa/admission-controller/review"
	"github.com/openvpa/openvpa/admission-controller/vpa"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// MaxBodyBytes is the largest AdmissionReview accepted.
const MaxBodyBytes = 5 << 20

const (
	apiVersionV1      = "admission.k8s.io/v1"
	apiVersionV1beta1 = "admission.k8s.io/v1beta1"
)

// PodAdmitter computes pod patches for the pod of a review, appending them
// to dst; a pod that cannot be decoded gives a *pod.DecodeError.
type PodAdmitter interface {
	AdmitRequest(ctx context.Context, req *review.Request, dst []byte) (pod.Result, error)
}

// VPAAdmitter validates VPAs.
type VPAAdmitter interface {
	Admit(v, old *vpav1.VerticalPodAutoscaler) vpa.Result
}

// Server is the AdmissionReview HTTP handler.
type Server struct {
	pods    PodAdmitter
	vpas    VPAAdmitter
	metrics *Metrics
	// activity, if set, is called on every review (liveness).
	activity func()
	// states holds *serveState.
	states sync.Pool
	// decodeLog samples the log lines about pods that cannot be decoded.
	decodeLog *sampledLog
}

// NewServer returns a Server. metrics may be nil.
func NewServer(pods PodAdmitter, vpas VPAAdmitter, metrics *Metrics, activity func()) *Server {
	return &Server{pods: pods, vpas: vpas, metrics: metrics, activity: activity,
		decodeLog: newSampledLog(clock.RealClock{}, DecodeLogInterval)}
}

// WithClock makes s time its log sampling with c and returns it.
func (s *Server) WithClock(c clock.PassiveClock) *Server {
	s.decodeLog = newSampledLog(c, DecodeLogInterval)
	return s
}

// maxWarning bounds a warning that quotes the request (a decoding error can
// name a key of any length).
const maxWarning = 512

func truncate(s string) string {
	if len(s) <= maxWarning {
		return s
	}
	return strings.ToValidUTF8(s[:maxWarning], "") + "..."
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, format+"\n", args...)
}

// serveState is the per-request working memory of a Server, pooled.
type serveState struct {
	body  []byte
	out   []byte
	patch []byte
	dec   review.Decoder
	req   review.Request
}

// responseBuffer is the size up to which net/http buffers a response and
// sets its Content-Length itself.
const responseBuffer = 2048

// maxPooledBuffer bounds the buffers kept in the pool, so one large review
// does not pin memory.
const maxPooledBuffer = 256 << 10

func (s *Server) getState() *serveState {
	if st, ok := s.states.Get().(*serveState); ok {
		return st
	}
	return &serveState{}
}

func (s *Server) putState(st *serveState) {
	if cap(st.body) > maxPooledBuffer || cap(st.out) > maxPooledBuffer || cap(st.patch) > maxPooledBuffer || st.dec.Scratch() > maxPooledBuffer {
		return
	}
	st.req = review.Request{}
	s.states.Put(st)
}

var (
	headerJSON = []string{"application/json"}
	jsonPatch  = admissionv1.PatchTypeJSONPatch
)

func jsonContentType(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// minBodyBuffer is the buffer a body is first read into; it grows (doubling)
// only as bytes arrive, never from the Content-Length a client announces, so
// a slow client that announces a large body holds a small buffer.
const minBodyBuffer = 4096

// errBodyTooLarge is returned by readBody for a body over MaxBodyBytes.
var errBodyTooLarge = errors.New("request body too large")

// readBody reads r into buf (reusing its capacity) up to MaxBodyBytes.
func readBody(r io.Reader, buf []byte) ([]byte, error) {
	buf = buf[:0]
	if cap(buf) < minBodyBuffer {
		buf = make([]byte, 0, minBodyBuffer)
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) > MaxBodyBytes {
				return buf, errBodyTooLarge
			}
			// One byte past the limit tells a body of exactly
			// MaxBodyBytes from a longer one.
			buf = slices.Grow(buf, min(cap(buf), MaxBodyBytes+1-len(buf)))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > MaxBodyBytes {
			return buf, errBodyTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if s.activity != nil {
		s.activity()
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpError(w, http.StatusMethodNotAllowed, "method %s not allowed: send the AdmissionReview with POST", r.Method)
		return
	}
	if ct := r.Header.Get("Content-Type"); !jsonContentType(ct) {
		httpError(w, http.StatusUnsupportedMediaType, "Content-Type %q not supported: send application/json", ct)
		return
	}
	if r.ContentLength > MaxBodyBytes {
		httpError(w, http.StatusRequestEntityTooLarge, "request body larger than %d bytes", MaxBodyBytes)
		return
	}
	st := s.getState()
	defer s.putState(st)
	body, err := readBody(r.Body, st.body)
	st.body = body
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			httpError(w, http.StatusRequestEntityTooLarge, "request body larger than %d bytes", MaxBodyBytes)
			return
		}
		httpError(w, http.StatusBadRequest, "reading the request body: %v", err)
		return
	}
	read := time.Now()
	req := &st.req
	if err := st.dec.Decode(body, req); err != nil {
		var full admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &full); err != nil {
			httpError(w, http.StatusBadRequest, "the body is not an AdmissionReview: %v", err)
			return
		}
		review.FromAdmissionReview(&full, req)
	}
	if v := string(req.APIVersion); v != apiVersionV1 && v != apiVersionV1beta1 {
		httpError(w, http.StatusBadRequest, "unsupported AdmissionReview apiVersion %q: want %s or %s", req.APIVersion, apiVersionV1, apiVersionV1beta1)
		return
	}
	if string(req.Kind) != "AdmissionReview" {
		httpError(w, http.StatusBadRequest, "unsupported kind %q: want AdmissionReview", req.Kind)
		return
	}
	if !req.HasRequest {
		httpError(w, http.StatusBadRequest, "the AdmissionReview has no request")
		return
	}
	resp, status, resource, podApplied := s.admit(r.Context(), req, st)
	admitted := time.Now()
	var data []byte
	if resp == nil {
		// Allowed, possibly with a patch in st.patch: the common case,
		// encoded without reflection.
		data = review.AppendAllowed(st.out[:0], req.APIVersion, req.UID, st.patch)
		st.out = data
	} else {
		resp.UID = types.UID(req.UID)
		out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: string(req.APIVersion), Kind: "AdmissionReview"}, Response: resp}
		data, err = json.Marshal(out)
		if err != nil {
			httpError(w, http.StatusInternalServerError, "encoding the response: %v", err)
			return
		}
	}
	h := w.Header()
	h["Content-Type"] = headerJSON
	if len(data) >= responseBuffer {
		// Smaller responses get their Content-Length from net/http,
		// without allocating; larger ones would otherwise be chunked.
		h["Content-Length"] = []string{strconv.Itoa(len(data))}
	}
	_, _ = w.Write(data)
	s.metrics.observe(start, read, admitted, status, resource, podApplied)
}

// admit answers one request. A nil response means allowed, with the patch
// in st.patch when it is not empty.
func (s *Server) admit(ctx context.Context, req *review.Request, st *serveState) (resp *admissionv1.AdmissionResponse, status outcome, resource kind, podApplied int) {
	st.patch = st.patch[:0]
	switch {
	case len(req.Group) == 0 && string(req.Version) == "v1" && string(req.Resource) == "pods":
		resp, status = s.admitPod(ctx, req, st)
		if status == statusApplied {
			return resp, status, resourcePod, podPatched
		}
		return resp, status, resourcePod, podNotPatched
	case string(req.Group) == vpav1.SchemeGroupVersion.Group && string(req.Resource) == "verticalpodautoscalers":
		resp, status = s.admitVPA(req)
		return resp, status, resourceVPA, notAPod
	default:
		if logger := klog.FromContext(ctx).V(2); logger.Enabled() {
			logger.Info("Ignoring an admission request for an unhandled resource", "group", string(req.Group), "version", string(req.Version), "resource", string(req.Resource))
		}
		return nil, statusSkipped, resourceUnknown, notAPod
	}
}

func (s *Server) admitPod(ctx context.Context, req *review.Request, st *serveState) (*admissionv1.AdmissionResponse, outcome) {
	if string(req.Operation) != string(admissionv1.Create) {
		return nil, statusSkipped
	}
	res, err := s.pods.AdmitRequest(ctx, req, st.patch[:0])
	if err != nil {
		var decodeErr *pod.DecodeError
		if errors.As(err, &decodeErr) {
			// Never deny a pod: admit it unchanged.
			s.decodeLog.Error(klog.FromContext(ctx), errors.New(truncate(decodeErr.Err.Error())), "Cannot decode the pod; admitting it unchanged", "namespace", truncate(string(req.Namespace)))
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{truncate("VPA admission controller could not decode the pod: " + decodeErr.Err.Error())}}, statusError
		}
		klog.FromContext(ctx).Error(err, "Cannot compute the pod patch; admitting it unchanged")
		return nil, statusError
	}
	if len(res.Patch) == 0 {
		if len(res.Warnings) > 0 {
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: res.Warnings}, statusSkipped
		}
		return nil, statusSkipped
	}
	st.patch = res.Patch
	status := statusSkipped
	if res.Applied {
		status = statusApplied
	}
	if len(res.Warnings) == 0 {
		return nil, status
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true, Warnings: res.Warnings, Patch: res.Patch, PatchType: &jsonPatch}
	return resp, status
}

func (s *Server) admitVPA(req *review.Request) (*admissionv1.AdmissionResponse, outcome) {
	op := admissionv1.Operation(req.Operation)
	if op != admissionv1.Create && op != admissionv1.Update {
		return &admissionv1.AdmissionResponse{Allowed: true}, statusSkipped
	}
	var v vpav1.VerticalPodAutoscaler
	// Decoded as the API server decodes: keys match exactly.
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.Object, &v); err != nil {
		return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, "cannot decode the VerticalPodAutoscaler: "+err.Error()), statusError
	}
	var old *vpav1.VerticalPodAutoscaler
	if op == admissionv1.Update {
		old = &vpav1.VerticalPodAutoscaler{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.OldObject, old); err != nil {
			return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, "cannot decode the stored VerticalPodAutoscaler: "+err.Error()), statusError
		}
	}
	res := s.vpas.Admit(&v, old)
	warnings := boundedWarnings(res.Warnings)
	if len(res.Errors) > 0 {
		resp := deny(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, denialMessage(res.Errors))
		resp.Warnings = warnings
		return resp, statusError
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
	if len(res.Patch) == 0 {
		return resp, statusSkipped
	}
	raw, err := json.Marshal(res.Patch)
	if err != nil {
		return deny(http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error()), statusError
	}
	resp.Patch = raw
	resp.PatchType = &jsonPatch
	return resp, statusApplied
}

// maxListed bounds the errors and warnings a response lists: a VPA of a
// hundred thousand invalid container policies gets a short answer.
const maxListed = 20

// denialMessage lists the first errors, each bounded, and counts the rest.
func denialMessage(errs field.ErrorList) string {
	shown := errs
	if len(shown) > maxListed {
		shown = shown[:maxListed]
	}
	msgs := make([]string, 0, len(shown)+1)
	for _, e := range shown {
		msgs = append(msgs, truncate(e.Error()))
	}
	if n := len(errs) - len(shown); n > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more errors", n))
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

func boundedWarnings(ws []string) []string {
	if len(ws) <= maxListed && !slices.ContainsFunc(ws, func(w string) bool { return len(w) > maxWarning }) {
		return ws
	}
	out := make([]string, 0, maxListed+1)
	for _, w := range ws[:min(len(ws), maxListed)] {
		out = append(out, truncate(w))
	}
	if n := len(ws) - maxListed; n > 0 {
		out = append(out, fmt.Sprintf("and %d more warnings", n))
	}
	return out
}

func deny(code int32, reason metav1.StatusReason, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg},
	}
}
