package pod

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

// VPAFinder finds the VPA that controls a pod: topmost controller, targetRef
// and selector match, Off-mode VPAs skipped, the stronger VPA winning. It
// returns nil when no VPA controls the pod.
type VPAFinder interface {
	ControllingVPA(ctx context.Context, pod *corev1.Pod) (*vpav1.VerticalPodAutoscaler, error)
}

// LimitRangeLister returns the merged LimitRanges of a namespace.
type LimitRangeLister interface {
	LimitRanges(namespace string) (recommendation.LimitRanges, error)
}

// Handler computes pod patches.
type Handler struct {
	vpas   VPAFinder
	limits LimitRangeLister
}

// NewHandler returns a Handler.
func NewHandler(vpas VPAFinder, limits LimitRangeLister) *Handler {
	return &Handler{vpas: vpas, limits: limits}
}

// Result is the outcome for one pod.
type Result struct {
	// VPA is the controlling VPA, nil when there is none.
	VPA *vpav1.VerticalPodAutoscaler
	// Patch is empty when there is nothing to do.
	Patch Patch
	// Applied reports whether any container's resources were changed.
	Applied bool
}

// Admit computes the patch for a pod being created in namespace (the
// request's namespace; pods often arrive without metadata.namespace).
func (h *Handler) Admit(ctx context.Context, pod *corev1.Pod, namespace string) (Result, error) {
	if pod.Namespace == "" {
		pod.Namespace = namespace
	}
	vpa, err := h.vpas.ControllingVPA(ctx, pod)
	if err != nil {
		return Result{}, fmt.Errorf("finding the VPA of pod %s: %w", displayName(pod), err)
	}
	if vpa == nil || !vpav1.GetUpdateMode(vpa).PatchesNewPods() {
		return Result{}, nil
	}
	lr, err := h.limits.LimitRanges(pod.Namespace)
	if err != nil {
		return Result{VPA: vpa}, fmt.Errorf("reading LimitRanges of namespace %s: %w", pod.Namespace, err)
	}
	patch, applied, err := Calculate(pod, vpa, lr)
	if err != nil {
		return Result{VPA: vpa}, err
	}
	klog.FromContext(ctx).V(4).Info("Computed pod patch", "pod", klog.KRef(pod.Namespace, displayName(pod)), "vpa", klog.KObj(vpa), "operations", len(patch))
	return Result{VPA: vpa, Patch: patch, Applied: applied}, nil
}

// displayName is the pod's name, or its generateName followed by "%" for
// pods whose name the API server has not generated yet.
func displayName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName + "%"
}

// Calculate returns the patch that applies vpa's recommendation to pod, and
// whether it changes any container's resources.
func Calculate(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr recommendation.LimitRanges) (Patch, bool, error) {
	patch := make(Patch, 0, 8)
	if pod.Annotations == nil {
		patch = append(patch, add("/metadata/annotations", map[string]string{}))
	}
	resources := recommendation.ForPod(pod, vpa, lr)
	var updates []annotations.ContainerUpdate
	var original annotations.Original
	for i := range resources {
		r := &resources[i]
		if len(r.Requests) == 0 && len(r.Limits) == 0 {
			continue
		}
		c := &pod.Spec.Containers[i]
		base := containerPath(i)
		if c.Resources.Requests == nil && c.Resources.Limits == nil && len(c.Resources.Claims) == 0 {
			patch = append(patch, add(base, map[string]any{}))
		}
		items := append([]string(nil), r.Notes...)
		patch, items = addResources(patch, items, base+"/requests", c.Resources.Requests, r.Requests, "request")
		patch, items = addResources(patch, items, base+"/limits", c.Resources.Limits, r.Limits, "limit")
		updates = append(updates, annotations.ContainerUpdate{Index: i, Items: items})
		if original == nil {
			original = annotations.Original{}
		}
		original[c.Name] = annotations.Resources{Requests: c.Resources.Requests, Limits: c.Resources.Limits}
	}
	if len(updates) > 0 {
		patch = append(patch, add(annotationPath(annotations.Updates), annotations.FormatUpdates(vpa.Name, updates)))
		enc, err := annotations.EncodeOriginal(original)
		if err != nil {
			return nil, false, err
		}
		patch = append(patch, add(annotationPath(annotations.OriginalResources), enc))
	}
	patch = append(patch, add(annotationPath(annotations.ObservedContainers), annotations.FormatObservedContainers(pod)))
	return patch, len(updates) > 0, nil
}

func addResources(patch Patch, items []string, path string, current, values corev1.ResourceList, kind string) (Patch, []string) {
	if len(values) == 0 {
		return patch, items
	}
	if current == nil {
		patch = append(patch, add(path, map[string]string{}))
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		q := values[name]
		patch = append(patch, add(path+"/"+escape(string(name)), q.String()))
		items = append(items, fmt.Sprintf("%s %s", name, kind))
	}
	return patch, items
}
