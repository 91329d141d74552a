package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/target"
)

// TargetRefIndex is the name of the VPA informer index Finder needs; add it
// with cache.Indexers{TargetRefIndex: TargetRefIndexFunc}.
const TargetRefIndex = "targetRef"

func targetRefKey(namespace, kind, name string) string {
	return namespace + "/" + kind + "/" + name
}

// TargetRefIndexFunc indexes VPAs by namespace/kind/name of their targetRef.
func TargetRefIndexFunc(obj any) ([]string, error) {
	vpa, ok := obj.(*vpav1.VerticalPodAutoscaler)
	if !ok {
		return nil, fmt.Errorf("expected a VerticalPodAutoscaler, got %T", obj)
	}
	if vpa.Spec.TargetRef == nil {
		return nil, nil
	}
	return []string{targetRefKey(vpa.Namespace, vpa.Spec.TargetRef.Kind, vpa.Spec.TargetRef.Name)}, nil
}

// ControllerResolver is the part of target.Resolver a Finder uses.
type ControllerResolver interface {
	PodController(ctx context.Context, pod *corev1.Pod) (*target.Ref, error)
	Selector(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (labels.Selector, error)
}

// Finder implements VPAFinder over a VPA informer indexed by TargetRefIndex:
// the pod's topmost controller selects the candidate VPAs by targetRef, and
// the VPA whose selector matches the pod wins, the stronger one
// (target.Stronger) among several. VPAs in mode Off are skipped.
type Finder struct {
	vpas     cache.Indexer
	resolver ControllerResolver
	allows   func(namespace string) bool
}

// NewFinder returns a Finder. allows filters namespaces (nil allows all).
func NewFinder(vpas cache.Indexer, resolver ControllerResolver, allows func(namespace string) bool) *Finder {
	return &Finder{vpas: vpas, resolver: resolver, allows: allows}
}

// ControllingVPA implements VPAFinder.
func (f *Finder) ControllingVPA(ctx context.Context, pod *corev1.Pod) (*vpav1.VerticalPodAutoscaler, error) {
	if f.allows != nil && !f.allows(pod.Namespace) {
		return nil, nil
	}
	ctrl, err := f.resolver.PodController(ctx, pod)
	if err != nil {
		return nil, err
	}
	if ctrl == nil {
		return nil, nil
	}
	objs, err := f.vpas.ByIndex(TargetRefIndex, targetRefKey(pod.Namespace, ctrl.Kind, ctrl.Name))
	if err != nil {
		return nil, err
	}
	var best *vpav1.VerticalPodAutoscaler
	podLabels := labels.Set(pod.Labels)
	for _, o := range objs {
		vpa, ok := o.(*vpav1.VerticalPodAutoscaler)
		if !ok || vpav1.GetUpdateMode(vpa) == vpav1.UpdateModeOff {
			continue
		}
		if best != nil && !target.Stronger(vpa, best) {
			continue
		}
		sel, err := f.resolver.Selector(ctx, vpa)
		if err != nil {
			klog.FromContext(ctx).V(3).Info("Skipping a VPA whose target cannot be read", "vpa", klog.KObj(vpa), "err", err.Error())
			continue
		}
		if sel.Matches(podLabels) {
			best = vpa
		}
	}
	return best, nil
}
