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

package pod

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/admission-controller/internal/jsonread"
	"github.com/openvpa/openvpa/admission-controller/review"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/boost"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

// VPAFinder finds the VPA that controls a pod: topmost controller, targetRef
// and selector match, Off-mode VPAs skipped, the stronger VPA winning. It
// returns nil when no VPA controls the pod.
type VPAFinder interface {
	ControllingVPA(ctx context.Context, pod *Decoded) (*vpav1.VerticalPodAutoscaler, error)
}

// LimitRangeLister returns the merged LimitRanges of a namespace.
type LimitRangeLister interface {
	LimitRanges(namespace string) (limitrange.Merged, error)
}

// NodeRooms answers which nodes a pod may be scheduled on and the room
// each leaves (nodefit.Cache).
type NodeRooms interface {
	Rooms(c nodefit.Constraints, exclude string) ([]nodefit.Room, bool)
}

// QuotaRooms answers what a namespace's ResourceQuotas leave (quota.Cache).
type QuotaRooms interface {
	Room(namespace string) *quota.Room
}

// EventRecorder records events; client-go's record.EventRecorder is one.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Handler computes pod patches. It is safe for concurrent use.
type Handler struct {
	vpas     VPAFinder
	limits   LimitRangeLister
	recorder EventRecorder
	// onConflict, when set, is called with the event reason of every plan
	// that gave way to the LimitRanges.
	onConflict func(reason string)
	// boost enables the CPU startup boost (feature gate CPUStartupBoost);
	// maxBoost caps a boosted CPU request when not zero.
	boost    bool
	maxBoost resource.Quantity
	// sidecars patches native sidecars as containers (NativeSidecar).
	sidecars bool
	// nodes, when set, caps requests so that the pod fits a node it may
	// use (--node-fit).
	nodes NodeRooms
	// quotas, when set, caps the increase of requests to what the
	// namespace's ResourceQuotas leave (--resource-quota-fit), keeping room
	// for surge(vpa) more pods.
	quotas QuotaRooms
	surge  func(*vpav1.VerticalPodAutoscaler) int32
	// hpas, when set, returns a namespace's HPAs: a resource one scales
	// the pod's workload on by its utilization is left to it
	// (--yield-to-hpa).
	hpas func(namespace string) []*autoscalingv2.HorizontalPodAutoscaler
	// states holds *state: decoders and scratch buffers reused across
	// reviews, so that a review allocates little.
	states sync.Pool
}

// state is the per-review working memory of a Handler.
type state struct {
	dec decoder
	scratch
}

// NewHandler returns a Handler.
func NewHandler(vpas VPAFinder, limits LimitRangeLister) *Handler {
	return &Handler{vpas: vpas, limits: limits}
}

// WithRecorder makes h record events on VPAs (recommendation's
// ReasonLimitRange* reasons) and returns it.
func (h *Handler) WithRecorder(r EventRecorder) *Handler {
	h.recorder = r
	return h
}

// WithConflictCounter makes h call count with the event reason
// (recommendation's ReasonLimitRange*) of every pod whose plan gave way to
// the LimitRanges, and returns it.
func (h *Handler) WithConflictCounter(count func(reason string)) *Handler {
	h.onConflict = count
	return h
}

// WithStartupBoost makes h raise the CPU of new pods whose VPA has a
// startupBoost (the CPUStartupBoost feature gate), to at most maxBoost when
// that is not zero, and returns it.
func (h *Handler) WithStartupBoost(maxBoost resource.Quantity) *Handler {
	h.boost = true
	h.maxBoost = maxBoost
	return h
}

// WithNativeSidecars makes h patch the native sidecars of pods (init
// containers with restartPolicy: Always) like their containers (the
// NativeSidecar feature gate), and returns it.
func (h *Handler) WithNativeSidecars() *Handler {
	h.sidecars = true
	return h
}

// WithNodeFit makes h cap the requests it sets so that the pod fits the
// largest node it may be scheduled on, and returns it.
func (h *Handler) WithNodeFit(n NodeRooms) *Handler {
	h.nodes = n
	return h
}

// WithQuotaFit makes h cap the increase of the requests it sets so that the
// namespace's ResourceQuotas still admit the pod and surge (may be nil)
// more of the workload's pods with their own requests, and returns it.
func (h *Handler) WithQuotaFit(q QuotaRooms, surge func(*vpav1.VerticalPodAutoscaler) int32) *Handler {
	h.quotas, h.surge = q, surge
	return h
}

// WithHPAYield makes h leave to an HPA a resource it scales the pod's
// workload on by its utilization (hpa.Yields over hpas' answer), and
// returns it.
func (h *Handler) WithHPAYield(hpas func(namespace string) []*autoscalingv2.HorizontalPodAutoscaler) *Handler {
	h.hpas = hpas
	return h
}

// fit is what the pod's plan must fit: the nodes it may use, the quota,
// the resources left to an HPA.
func (h *Handler) fit(p *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler) recommendation.Fit {
	var f recommendation.Fit
	if h.nodes != nil {
		if rooms, ok := h.nodes.Rooms(nodefit.Of(&p.Spec), nodefit.DaemonSetOf(p)); ok {
			f.Nodes = rooms
		}
	}
	if h.quotas != nil {
		if f.Quota = h.quotas.Room(p.Namespace); f.Quota != nil && h.surge != nil {
			f.Surge = h.surge(vpa)
		}
	}
	if h.hpas != nil {
		if hpas := h.hpas(p.Namespace); len(hpas) > 0 {
			names := make([]string, len(p.Spec.Containers))
			for i := range p.Spec.Containers {
				names[i] = p.Spec.Containers[i].Name
			}
			f.Yield = hpa.Yields(vpa, hpas, names)
		}
	}
	return f
}

// Result is the outcome for one pod.
type Result struct {
	// VPA is the controlling VPA, nil when there is none.
	VPA *vpav1.VerticalPodAutoscaler
	// Patch is the RFC 6902 JSON Patch, appended to the buffer the caller
	// passed; empty when there is nothing to do.
	Patch []byte
	// Applied reports whether any container's resources were changed.
	Applied bool
	// Warnings are for the AdmissionResponse: why the recommendation was
	// not applied as it stands.
	Warnings []string
}

// DecodeError is returned by AdmitJSON when the pod cannot be decoded.
type DecodeError struct{ Err error }

func (e *DecodeError) Error() string { return "decoding the pod: " + e.Err.Error() }

func (e *DecodeError) Unwrap() error { return e.Err }

// AdmitJSON decodes a pod from the JSON of an AdmissionReview's object and
// computes its patch like Admit, appending it to dst. A pod that cannot be
// decoded gives a *DecodeError.
func (h *Handler) AdmitJSON(ctx context.Context, raw []byte, namespace string, dst []byte) (Result, error) {
	return h.admitJSON(ctx, raw, false, namespace, nil, dst)
}

// AdmitRequest is AdmitJSON for the pod of a review decoded by
// review.Decoder (or review.FromAdmissionReview), whose JSON has been
// validated with the review and is not validated again.
func (h *Handler) AdmitRequest(ctx context.Context, req *review.Request, dst []byte) (Result, error) {
	return h.admitJSON(ctx, req.Object, true, "", req.Namespace, dst)
}

// admitJSON takes the request's namespace as a string or, to be converted
// only when the pod does not name its own, as bytes.
func (h *Handler) admitJSON(ctx context.Context, raw []byte, valid bool, namespace string, namespaceBytes []byte, dst []byte) (Result, error) {
	st := h.state()
	defer h.putState(st)
	pod, err := st.dec.decodeChecked(raw, valid)
	if err != nil {
		var tooMany *TooManyContainersError
		if errors.As(err, &tooMany) {
			return Result{Warnings: []string{"VPA admission controller: " + tooMany.Error() + "; not patched"}}, nil
		}
		return Result{}, &DecodeError{Err: err}
	}
	if pod.Namespace == "" && namespace == "" {
		namespace = string(namespaceBytes)
	}
	return h.admit(ctx, pod, namespace, dst, &st.scratch)
}

func (h *Handler) state() *state {
	if st, ok := h.states.Get().(*state); ok {
		return st
	}
	return &state{}
}

// putState keeps st for the next review unless a large pod grew it: a pool
// that keeps large states keeps their memory for as long as reviews come.
func (h *Handler) putState(st *state) {
	if st.dec.small() && st.scratch.small() {
		h.states.Put(st)
	}
}

// Admit computes the patch for a pod being created in namespace (the
// request's namespace; pods often arrive without metadata.namespace),
// appending it to dst. It sets pod's namespace when the pod has none.
func (h *Handler) Admit(ctx context.Context, pod *Decoded, namespace string, dst []byte) (Result, error) {
	st := h.state()
	defer h.putState(st)
	return h.admit(ctx, pod, namespace, dst, &st.scratch)
}

func (h *Handler) admit(ctx context.Context, pod *Decoded, namespace string, dst []byte, sc *scratch) (Result, error) {
	if pod.Namespace == "" {
		pod.Namespace = namespace
	}
	vpa, err := h.vpas.ControllingVPA(ctx, pod)
	if err != nil {
		return Result{}, fmt.Errorf("finding the VPA of pod %s: %w", pod.displayName(), err)
	}
	if vpa == nil {
		return Result{}, nil
	}
	patches := vpav1.GetUpdateMode(vpa).PatchesNewPods()
	boosting := h.boost && boost.Configured(vpa)
	if !patches && !boosting {
		return Result{}, nil
	}
	lr, err := h.limits.LimitRanges(pod.Namespace)
	if err != nil {
		return Result{VPA: vpa}, fmt.Errorf("reading LimitRanges of namespace %s: %w", pod.Namespace, err)
	}
	logger := klog.FromContext(ctx)
	start := len(dst)
	var lay layout
	if h.sidecars {
		pod, lay = withSidecars(pod)
	}
	p := pod.Pod(&sc.pod)
	var plan recommendation.Plan
	fit := h.fit(p, vpa)
	if patches {
		plan = recommendation.PlanForPodSharedFit(p, vpa, lr, fit)
	} else {
		// Off: the recommendation is not applied, only the boost.
		plan = recommendation.Plan{Containers: make([]recommendation.ContainerResources, len(p.Spec.Containers))}
	}
	var marks map[string]string
	var warnings []string
	if boosting {
		marks, warnings = h.applyBoost(logger, pod, p, vpa, lr, fit, &plan)
	}
	dst, applied, err := appendPatch(dst, pod, vpa, &plan, marks, lay, sc)
	if errors.Is(err, errPatchTooLarge) {
		return Result{VPA: vpa, Warnings: []string{fmt.Sprintf("VPA %s: the patch would be larger than %d bytes, more than the API server can apply to a pod it can store; not patched", vpa.Name, MaxPatchBytes)}}, nil
	}
	if err != nil {
		return Result{VPA: vpa}, err
	}
	if l := logger.V(4); l.Enabled() {
		l.Info("Computed pod patch", "pod", klog.KRef(pod.Namespace, pod.displayName()), "vpa", klog.KObj(vpa), "patch", string(dst[start:]))
	}
	res := Result{VPA: vpa, Patch: dst[start:], Applied: applied, Warnings: warnings}
	if plan.Conflict != nil {
		res.Warnings = append(res.Warnings, h.conflict(logger, pod, vpa, &plan)...)
	}
	if plan.Node != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("VPA %s: requests capped to fit node %s, the largest the pod may be scheduled on (%s left by its DaemonSet pods)",
			vpa.Name, plan.Node.Node, plan.Node.Free))
	}
	if plan.Quota != nil {
		res.Warnings = append(res.Warnings, h.quotaConflict(logger, pod, vpa, plan.Quota))
	}
	return res, nil
}

// quotaConflict reports a plan whose increase was capped to the quota: a
// log line, an event on the VPA and the warning for the response.
func (h *Handler) quotaConflict(logger klog.Logger, pod *Decoded, vpa *vpav1.VerticalPodAutoscaler, qc *recommendation.QuotaCap) string {
	msg := fmt.Sprintf("VPA %s: increase of %s capped to what ResourceQuota %s leaves (requests %s, limits %s)",
		vpa.Name, resourceNames(qc.Resources), qc.Quotas, qc.Allowed.Requests, qc.Allowed.Limits)
	if qc.KeptRequests {
		msg = fmt.Sprintf("VPA %s: recommendation not applied, ResourceQuota %s leaves too little room for it and the LimitRanges refuse what it leaves", vpa.Name, qc.Quotas)
	}
	logger.Info("Recommendation capped to the ResourceQuota", "pod", klog.KRef(pod.Namespace, pod.displayName()), "vpa", klog.KObj(vpa),
		"quotas", qc.Quotas, "resources", qc.Resources, "keptRequests", qc.KeptRequests)
	if h.recorder != nil {
		h.recorder.Eventf(vpa, corev1.EventTypeWarning, recommendation.ReasonResourceQuotaConflict, "Pod %s: %s", pod.displayName(), msg)
	}
	return msg
}

func resourceNames(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, " and ")
}

// applyBoost raises the CPU of the containers vpa boosts in plan and returns
// the boost annotations. A boost the namespace's LimitRanges (or the pod's
// own resources) would refuse is not applied: the pod is created with its
// plan unboosted, and a warning says why.
func (h *Handler) applyBoost(logger klog.Logger, pod *Decoded, p *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged, fit recommendation.Fit, plan *recommendation.Plan) (map[string]string, []string) {
	boosted := slices.Clone(plan.Containers)
	marks, err := boost.Apply(p, vpa, boosted, h.maxBoost)
	if err != nil {
		logger.Info("Startup boost not applied", "pod", klog.KRef(pod.Namespace, pod.displayName()), "vpa", klog.KObj(vpa), "err", err.Error())
		return nil, []string{fmt.Sprintf("VPA %s: startup boost not applied: %v", vpa.Name, err)}
	}
	if len(marks) == 0 {
		return nil, nil
	}
	if len(lr.Items) > 0 || p.Spec.Resources != nil {
		if err := recommendation.Admissible(p, boosted, lr.Items); err != nil {
			why := strings.ReplaceAll(err.Error(), "\n", "; ")
			logger.Info("Startup boost not applied: the pod would be refused", "pod", klog.KRef(pod.Namespace, pod.displayName()), "vpa", klog.KObj(vpa), "conflict", why)
			return nil, []string{fmt.Sprintf("VPA %s: startup boost not applied, the namespace's LimitRanges would refuse the pod with it (%s)", vpa.Name, why)}
		}
	}
	if why := recommendation.Outside(p, boosted, fit); why != "" {
		logger.Info("Startup boost not applied: the pod would not fit", "pod", klog.KRef(pod.Namespace, pod.displayName()), "vpa", klog.KObj(vpa), "why", why)
		return nil, []string{fmt.Sprintf("VPA %s: startup boost not applied, %s", vpa.Name, why)}
	}
	plan.Containers = boosted
	return marks, nil
}

// conflict reports a plan that had to give way to the LimitRanges: a log
// line, an event on the VPA and the warning for the response.
func (h *Handler) conflict(logger klog.Logger, pod *Decoded, vpa *vpav1.VerticalPodAutoscaler, plan *recommendation.Plan) []string {
	why := plan.Why()
	msg := fmt.Sprintf("VPA %s: recommendation not applied, the namespace's LimitRanges would refuse the pod with it (%s)", vpa.Name, why)
	if plan.PolicyOverridden {
		msg = fmt.Sprintf("VPA %s: requests capped to the namespace's LimitRanges past the VPA's resource policy, which they do not admit (%s)", vpa.Name, why)
	}
	logger.Info("Recommendation gave way to LimitRanges", "pod", klog.KRef(pod.Namespace, pod.displayName()), "vpa", klog.KObj(vpa), "reason", plan.ConflictReason(), "conflict", why)
	if h.recorder != nil {
		h.recorder.Eventf(vpa, corev1.EventTypeWarning, plan.ConflictReason(), "Pod %s: %s", pod.displayName(), msg)
	}
	if h.onConflict != nil {
		h.onConflict(plan.ConflictReason())
	}
	return []string{msg}
}

// AppendPatch appends to dst the JSON Patch that applies vpa's
// recommendation to pod, and reports whether it changes any container's
// resources.
func AppendPatch(dst []byte, pod *Decoded, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged) ([]byte, bool, error) {
	sc := &scratch{}
	plan := planFor(pod, vpa, lr, sc)
	return appendPatch(dst, pod, vpa, &plan, nil, layout{}, sc)
}

// layout says where the containers of a Decoded are in the pod: those from
// index regular on are the native sidecars at init container indexes
// sidecars. The zero layout has no sidecars.
type layout struct {
	regular  int
	sidecars []int
}

// withSidecars returns pod with its native sidecars moved from its init
// containers to the end of its containers, as sidecar.View does, and their
// layout. A pod without native sidecars is returned as it is.
func withSidecars(pod *Decoded) (*Decoded, layout) {
	var idx []int
	for i := range pod.InitContainers {
		if rp := pod.InitContainers[i].RestartPolicy; rp != nil && *rp == corev1.ContainerRestartPolicyAlways {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return pod, layout{}
	}
	v := *pod
	v.Containers = make([]Container, 0, len(pod.Containers)+len(idx))
	v.Containers = append(v.Containers, pod.Containers...)
	v.InitContainers = make([]Container, 0, len(pod.InitContainers)-len(idx))
	for i := range pod.InitContainers {
		if slices.Contains(idx, i) {
			v.Containers = append(v.Containers, pod.InitContainers[i])
		} else {
			v.InitContainers = append(v.InitContainers, pod.InitContainers[i])
		}
	}
	return &v, layout{regular: len(pod.Containers), sidecars: idx}
}

// appendContainerPath appends the JSON Pointer of container i of a pod with
// the layout.
func (l layout) appendContainerPath(b []byte, i int) []byte {
	if l.sidecars == nil || i < l.regular {
		b = append(b, "/spec/containers/"...)
		return strconv.AppendInt(b, int64(i), 10)
	}
	b = append(b, "/spec/initContainers/"...)
	return strconv.AppendInt(b, int64(l.sidecars[i-l.regular]), 10)
}

// planFor is what vpa's recommendation gives pod, planned by
// pkg/recommendation on the pod Decoded.Pod builds in sc.
func planFor(pod *Decoded, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged, sc *scratch) recommendation.Plan {
	return recommendation.PlanForPodShared(pod.Pod(&sc.pod), vpa, lr)
}

// MaxPatchBytes bounds the JSON Patch for one pod: the API server stores
// objects up to 1.5 MiB (etcd's default request limit), and a pod that needs a
// larger patch than 1 MiB is far past any pod it stores.
const MaxPatchBytes = 1 << 20

var errPatchTooLarge = errors.New("patch too large")

// scratch is reusable working memory for admit and appendPatch.
type scratch struct {
	path    []byte // the JSON Pointer being built
	updates []byte // the vpaUpdates value being built
	orig    []byte // the original-resources value being built
	patched []int  // indexes of patched containers
	names   []corev1.ResourceName
	// pod is the reviewed pod as Decoded.Pod gives it, for the plan.
	pod corev1.Pod
}

// small reports whether sc is small enough to be kept for reuse.
func (sc *scratch) small() bool {
	const max = 64 << 10
	return cap(sc.path) <= max && cap(sc.updates) <= max && cap(sc.orig) <= max && cap(sc.patched) <= maxPooled && cap(sc.names) <= maxPooled &&
		cap(sc.pod.Spec.Containers) <= maxPooled && cap(sc.pod.Spec.InitContainers) <= maxPooled && cap(sc.pod.OwnerReferences) <= maxPooled
}

// patchWriter appends "add" operations to a JSON array.
type patchWriter struct {
	buf []byte
	ops int
}

// add starts an "add" operation at path; the caller appends the value and
// then calls end.
func (w *patchWriter) add(path []byte) {
	if w.ops == 0 {
		w.buf = append(w.buf, '[')
	} else {
		w.buf = append(w.buf, ',')
	}
	w.ops++
	w.buf = append(w.buf, `{"op":"add","path":`...)
	w.buf = jsonread.AppendString(w.buf, path)
	w.buf = append(w.buf, `,"value":`...)
}

func (w *patchWriter) end() { w.buf = append(w.buf, '}') }

func (w *patchWriter) addString(path []byte, value []byte) {
	w.add(path)
	w.buf = jsonread.AppendString(w.buf, value)
	w.end()
}

func (w *patchWriter) addEmptyObject(path []byte) {
	w.add(path)
	w.buf = append(w.buf, '{', '}')
	w.end()
}

var (
	annotationsPath        = []byte("/metadata/annotations")
	updatesPath            = []byte("/metadata/annotations/" + escape(annotations.Updates))
	originalResourcesPath  = []byte("/metadata/annotations/" + escape(annotations.OriginalResources))
	observedContainersPath = []byte("/metadata/annotations/" + escape(annotations.ObservedContainers))
)

// appendPatch appends the patch that gives pod the plan, computed for it
// from vpa's recommendation, and sets the extra annotations (in key order).
func appendPatch(dst []byte, pod *Decoded, vpa *vpav1.VerticalPodAutoscaler, plan *recommendation.Plan, extra map[string]string, lay layout, sc *scratch) ([]byte, bool, error) {
	start := len(dst)
	w := patchWriter{buf: dst}
	tooLarge := func() bool { return len(w.buf)-start+len(sc.updates)+len(sc.path) > MaxPatchBytes }
	if pod.Annotations == nil {
		w.addEmptyObject(annotationsPath)
	}
	resources := plan.Containers
	sc.updates = append(sc.updates[:0], "Pod resources updated by "...)
	sc.updates = append(sc.updates, vpa.Name...)
	sc.updates = append(sc.updates, ": "...)
	sc.patched = sc.patched[:0]
	for i := range resources {
		r := &resources[i]
		if len(r.Requests) == 0 && len(r.Limits) == 0 {
			continue
		}
		c := &pod.Containers[i]
		sc.path = lay.appendContainerPath(sc.path[:0], i)
		sc.path = append(sc.path, "/resources"...)
		if c.Resources.Requests == nil && c.Resources.Limits == nil && len(c.Resources.Claims) == 0 {
			w.addEmptyObject(sc.path)
		}
		if len(sc.patched) > 0 {
			sc.updates = append(sc.updates, "; "...)
		}
		if lay.sidecars != nil && i >= lay.regular {
			sc.updates = append(sc.updates, "init container "...)
			sc.updates = strconv.AppendInt(sc.updates, int64(lay.sidecars[i-lay.regular]), 10)
		} else {
			sc.updates = append(sc.updates, "container "...)
			sc.updates = strconv.AppendInt(sc.updates, int64(i), 10)
		}
		sc.updates = append(sc.updates, ": "...)
		items := 0
		for _, n := range r.Notes {
			sc.updates = appendItem(sc.updates, &items, n, "")
		}
		items = addResources(&w, sc, "/requests", c.Resources.Requests, r.Requests, " request", items)
		addResources(&w, sc, "/limits", c.Resources.Limits, r.Limits, " limit", items)
		sc.patched = append(sc.patched, i)
		if tooLarge() {
			return dst, false, errPatchTooLarge
		}
	}
	if len(extra) > 0 {
		keys := make([]string, 0, len(extra))
		for k := range extra {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sc.path = append(sc.path[:0], annotationsPath...)
			sc.path = append(sc.path, '/')
			sc.path = appendEscaped(sc.path, k)
			w.addString(sc.path, []byte(extra[k]))
		}
	}
	if len(sc.patched) > 0 {
		w.addString(updatesPath, sc.updates)
		sc.orig = appendOriginal(sc.orig[:0], pod, sc)
		w.addString(originalResourcesPath, sc.orig)
	}
	sc.path = sc.path[:0]
	sc.updates = sc.updates[:0]
	for i := range pod.Containers {
		if i > 0 {
			sc.path = append(sc.path, ", "...)
		}
		sc.path = append(sc.path, pod.Containers[i].Name...)
		if tooLarge() {
			return dst, false, errPatchTooLarge
		}
	}
	w.addString(observedContainersPath, sc.path)
	if tooLarge() {
		return dst, false, errPatchTooLarge
	}
	w.buf = append(w.buf, ']')
	return w.buf, len(sc.patched) > 0, nil
}

func appendItem(b []byte, items *int, s, suffix string) []byte {
	if *items > 0 {
		b = append(b, ", "...)
	}
	*items++
	b = append(b, s...)
	return append(b, suffix...)
}

// sortedNames returns the names of l, sorted, in sc.names.
func sortedNames(l corev1.ResourceList, sc *scratch) []corev1.ResourceName {
	sc.names = sc.names[:0]
	for name := range l {
		sc.names = append(sc.names, name)
	}
	slices.Sort(sc.names)
	return sc.names
}

// addResources adds the values of one resource map (requests or limits) of
// the container whose resources path is in sc.path, and their vpaUpdates
// items.
func addResources(w *patchWriter, sc *scratch, sub string, current, values corev1.ResourceList, kind string, items int) int {
	if len(values) == 0 {
		return items
	}
	base := len(sc.path)
	sc.path = append(sc.path, sub...)
	if current == nil {
		w.addEmptyObject(sc.path)
	}
	prefix := len(sc.path)
	for _, name := range sortedNames(values, sc) {
		q := values[name]
		sc.path = append(sc.path[:prefix], '/')
		sc.path = appendEscaped(sc.path, string(name))
		w.add(sc.path)
		w.buf = jsonread.AppendString(w.buf, q.String())
		w.end()
		sc.updates = appendItem(sc.updates, &items, string(name), kind)
	}
	sc.path = sc.path[:base]
	return items
}

// appendOriginal appends the openvpa.io/original-resources value for the
// patched containers: the JSON that annotations.EncodeOriginal gives, keys in
// order, a container name listed twice keeping its last container.
func appendOriginal(b []byte, pod *Decoded, sc *scratch) []byte {
	idx := sc.patched
	slices.SortStableFunc(idx, func(a, b int) int {
		return strings.Compare(pod.Containers[a].Name, pod.Containers[b].Name)
	})
	b = append(b, '{')
	first := true
	for k, i := range idx {
		c := &pod.Containers[i]
		if k+1 < len(idx) && pod.Containers[idx[k+1]].Name == c.Name {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = jsonread.AppendString(b, c.Name)
		b = append(b, ':', '{')
		if len(c.Resources.Requests) > 0 {
			b = append(b, `"requests":`...)
			b = appendResourceList(b, c.Resources.Requests, sc)
		}
		if len(c.Resources.Limits) > 0 {
			if len(c.Resources.Requests) > 0 {
				b = append(b, ',')
			}
			b = append(b, `"limits":`...)
			b = appendResourceList(b, c.Resources.Limits, sc)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendResourceList(b []byte, l corev1.ResourceList, sc *scratch) []byte {
	b = append(b, '{')
	for k, name := range sortedNames(l, sc) {
		if k > 0 {
			b = append(b, ',')
		}
		b = jsonread.AppendString(b, string(name))
		q := l[name]
		b = append(b, ':')
		b = jsonread.AppendString(b, q.String())
	}
	return append(b, '}')
}

// escape escapes one JSON Pointer reference token (RFC 6901).
func escape(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// appendEscaped appends escape(token).
func appendEscaped(b []byte, token string) []byte {
	for i := 0; i < len(token); i++ {
		switch c := token[i]; c {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, c)
		}
	}
	return b
}
