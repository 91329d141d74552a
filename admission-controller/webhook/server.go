package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/admission-controller/pod"
	"github.com/openvpa/openvpa/admission-controller/vpa"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// MaxBodyBytes is the largest AdmissionReview accepted.
const MaxBodyBytes = 5 << 20

const (
	apiVersionV1      = "admission.k8s.io/v1"
	apiVersionV1beta1 = "admission.k8s.io/v1beta1"
)

// PodAdmitter computes pod patches.
type PodAdmitter interface {
	Admit(ctx context.Context, p *corev1.Pod, namespace string) (pod.Result, error)
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
}

// NewServer returns a Server. metrics may be nil.
func NewServer(pods PodAdmitter, vpas VPAAdmitter, metrics *Metrics, activity func()) *Server {
	return &Server{pods: pods, vpas: vpas, metrics: metrics, activity: activity}
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, format+"\n", args...)
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
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "Content-Type %q not supported: send application/json", r.Header.Get("Content-Type"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, "request body larger than %d bytes", MaxBodyBytes)
			return
		}
		httpError(w, http.StatusBadRequest, "reading the request body: %v", err)
		return
	}
	read := time.Now()
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		httpError(w, http.StatusBadRequest, "the body is not an AdmissionReview: %v", err)
		return
	}
	if review.APIVersion != apiVersionV1 && review.APIVersion != apiVersionV1beta1 {
		httpError(w, http.StatusBadRequest, "unsupported AdmissionReview apiVersion %q: want %s or %s", review.APIVersion, apiVersionV1, apiVersionV1beta1)
		return
	}
	if review.Kind != "AdmissionReview" {
		httpError(w, http.StatusBadRequest, "unsupported kind %q: want AdmissionReview", review.Kind)
		return
	}
	if review.Request == nil {
		httpError(w, http.StatusBadRequest, "the AdmissionReview has no request")
		return
	}
	resp, status, resource, podApplied := s.admit(r.Context(), review.Request)
	admitted := time.Now()
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: review.APIVersion, Kind: "AdmissionReview"}, Response: resp}
	data, err := json.Marshal(out)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "encoding the response: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
	s.metrics.observe(start, read, admitted, status, resource, podApplied)
}

var (
	podResource = metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "pods"}
	jsonPatch   = admissionv1.PatchTypeJSONPatch
)

func (s *Server) admit(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse, status, resource string, podApplied *bool) {
	logger := klog.FromContext(ctx)
	switch {
	case req.Resource == podResource:
		applied := false
		resp, status = s.admitPod(ctx, req)
		applied = status == statusApplied
		return resp, status, resourcePod, &applied
	case req.Resource.Group == vpav1.SchemeGroupVersion.Group && req.Resource.Resource == "verticalpodautoscalers":
		resp, status = s.admitVPA(req)
		return resp, status, resourceVPA, nil
	default:
		logger.V(2).Info("Ignoring an admission request for an unhandled resource", "resource", req.Resource)
		return &admissionv1.AdmissionResponse{Allowed: true}, statusSkipped, resourceUnknown, nil
	}
}

func (s *Server) admitPod(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	logger := klog.FromContext(ctx)
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Operation != admissionv1.Create {
		return allow, statusSkipped
	}
	var p corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &p); err != nil {
		// Never deny a pod: admit it unchanged.
		logger.Error(err, "Cannot decode the pod; admitting it unchanged", "namespace", req.Namespace)
		allow.Warnings = []string{"VPA admission controller could not decode the pod: " + err.Error()}
		return allow, statusError
	}
	res, err := s.pods.Admit(ctx, &p, req.Namespace)
	if err != nil {
		logger.Error(err, "Cannot compute the pod patch; admitting it unchanged")
		return allow, statusError
	}
	if len(res.Patch) == 0 {
		return allow, statusSkipped
	}
	raw, err := res.Patch.Marshal()
	if err != nil {
		logger.Error(err, "Cannot encode the pod patch; admitting it unchanged")
		return allow, statusError
	}
	allow.Patch = raw
	allow.PatchType = &jsonPatch
	if !res.Applied {
		return allow, statusSkipped
	}
	return allow, statusApplied
}

func (s *Server) admitVPA(req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return &admissionv1.AdmissionResponse{Allowed: true}, statusSkipped
	}
	var v vpav1.VerticalPodAutoscaler
	if err := json.Unmarshal(req.Object.Raw, &v); err != nil {
		return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, "cannot decode the VerticalPodAutoscaler: "+err.Error()), statusError
	}
	var old *vpav1.VerticalPodAutoscaler
	if req.Operation == admissionv1.Update {
		old = &vpav1.VerticalPodAutoscaler{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, "cannot decode the stored VerticalPodAutoscaler: "+err.Error()), statusError
		}
	}
	res := s.vpas.Admit(&v, old)
	if len(res.Errors) > 0 {
		resp := deny(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, res.Errors.ToAggregate().Error())
		resp.Warnings = res.Warnings
		return resp, statusError
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true, Warnings: res.Warnings}
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

func deny(code int32, reason metav1.StatusReason, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg},
	}
}
