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

// Package scalepoint keeps the scale point of the HorizontalPodAutoscalers
// of the VPAs in scale-point mode (hpa.ModeScalePoint), for the updater's
// --hpa-scale-point. For each HPA metric on the utilization of a resource
// the VPA sets, it records on the HPA (hpa.ScalePointAnnotation) the target
// the HPA had and the request per pod it was set for, and from then on sets
// the target to round(original × recorded request / current request), the
// current request being the mean over the running pods as the HPA
// controller sums it. So the usage at which the HPA adds a replica stays
// where it was, whatever requests the VPA gives the pods. Every target is
// computed from the recorded original, so rounding never adds up. When the
// VPA is deleted or leaves the mode, the original targets come back and the
// record goes.
package scalepoint

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/namespaces"
)

// Event reasons.
const (
	// ReasonRecorded (on the VPA): the HPA's target and the request it was
	// set for are recorded; from now on the target follows the requests.
	ReasonRecorded = "HPAScalePointRecorded"
	// ReasonRetuned (on the VPA): the HPA's target was scaled to the pods'
	// current requests.
	ReasonRetuned = "HPATargetRetuned"
	// ReasonRestored (on the HPA): the recorded target is back and the
	// record removed, as the VPA left the mode or is gone.
	ReasonRestored = "HPATargetRestored"
	// ReasonRetuneFailed (on the VPA, else the HPA): the HPA could not be
	// written; a Forbidden answer names the missing RBAC.
	ReasonRetuneFailed = "HPARetuneFailed"
)

// Actions, the action label of Keeper.Writes.
const (
	ActionRecord  = "record"
	ActionRetune  = "retune"
	ActionRestore = "restore"
)

// HPASource reads the cached (hpa.Trim-med) HPAs (hpa.Cache).
type HPASource interface {
	Lookup(namespace string) ([]*autoscalingv2.HorizontalPodAutoscaler, bool)
	All() []*autoscalingv2.HorizontalPodAutoscaler
}

// HPAClient reads and writes whole HPAs.
type HPAClient interface {
	Get(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error)
	Update(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler) error
}

// Keeper keeps the scale points. Sync does one pass.
type Keeper struct {
	// VPAs lists the VPAs.
	VPAs func() ([]*vpav1.VerticalPodAutoscaler, error)
	// Selector returns the label selector of the VPA's target's pods.
	Selector func(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (labels.Selector, error)
	// Pods lists the pods of a namespace that sel matches.
	Pods func(namespace string, sel labels.Selector) ([]*corev1.Pod, error)
	// HPAs are the cached HPAs.
	HPAs HPASource
	// Client writes the HPAs.
	Client HPAClient
	// Recorder records the events.
	Recorder record.EventRecorder
	// Writes counts the HPA writes by action and result (success,
	// forbidden, error): vpa_updater_hpa_scale_point_writes_total.
	// Nil counts nothing.
	Writes *prometheus.CounterVec
	// Namespaces filters the VPAs and HPAs handled.
	Namespaces namespaces.Filter
}

// Sync restores the HPAs whose record no VPA in scale-point mode owns any
// more, then records or retunes the HPAs of every VPA in the mode. A
// failure on one HPA is reported (event, metric, log) and does not stop the
// others.
func (k *Keeper) Sync(ctx context.Context) error {
	vpas, err := k.VPAs()
	if err != nil {
		return fmt.Errorf("listing VPAs: %w", err)
	}
	inMode := map[string]*vpav1.VerticalPodAutoscaler{}
	var keys []string
	for _, v := range vpas {
		if hpa.ScalePointMode(v) && v.Spec.TargetRef != nil && k.Namespaces.Allows(v.Namespace) {
			key := v.Namespace + "/" + v.Name
			inMode[key] = v
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	restored := map[string]bool{}
	for _, h := range k.HPAs.All() {
		if !k.Namespaces.Allows(h.Namespace) {
			continue
		}
		r, err := hpa.RecordOf(h)
		if err != nil || r == nil {
			continue
		}
		if v := inMode[h.Namespace+"/"+r.VPA]; v == nil || !scales(v, h) {
			k.restore(ctx, h, r, nil)
			restored[h.Namespace+"/"+h.Name] = true
		}
	}
	for _, key := range keys {
		v := inMode[key]
		hpas, ok := k.HPAs.Lookup(v.Namespace)
		if !ok || len(hpas) == 0 {
			continue
		}
		pods, err := k.runningPods(ctx, v)
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Skipping the scale points of a VPA whose pods are not known", "vpa", klog.KObj(v), "err", err)
			continue
		}
		var containers []string
		if len(pods) > 0 {
			for _, c := range pods[0].Spec.Containers {
				containers = append(containers, c.Name)
			}
		}
		byHPA := map[string][]hpa.Conflict{}
		for _, c := range hpa.OnUtilization(v, hpas, containers) {
			byHPA[c.HPA] = append(byHPA[c.HPA], c)
		}
		for _, h := range hpas {
			if restored[h.Namespace+"/"+h.Name] || !scales(v, h) {
				continue
			}
			k.keep(ctx, v, h, byHPA[h.Name], pods)
		}
	}
	return nil
}

// scales reports whether h scales v's target.
func scales(v *vpav1.VerticalPodAutoscaler, h *autoscalingv2.HorizontalPodAutoscaler) bool {
	ref := v.Spec.TargetRef
	return ref != nil && h.Namespace == v.Namespace && h.Spec.ScaleTargetRef.Kind == ref.Kind && h.Spec.ScaleTargetRef.Name == ref.Name
}

func (k *Keeper) runningPods(ctx context.Context, v *vpav1.VerticalPodAutoscaler) ([]*corev1.Pod, error) {
	sel, err := k.Selector(ctx, v)
	if err != nil {
		return nil, err
	}
	all, err := k.Pods(v.Namespace, sel)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, p := range all {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// change is one target to write.
type change struct {
	c    hpa.Conflict
	from int32
	to   int32
}

// keep records or retunes h's metrics on the utilization of v's resources
// (conflicts) for the pods' current requests.
func (k *Keeper) keep(ctx context.Context, v *vpav1.VerticalPodAutoscaler, h *autoscalingv2.HorizontalPodAutoscaler, conflicts []hpa.Conflict, pods []*corev1.Pod) {
	logger := klog.FromContext(ctx)
	old, err := hpa.RecordOf(h)
	if err != nil {
		logger.Info("Recording the scale point anew over a record that does not decode", "hpa", klog.KObj(h), "err", err)
		old = nil
	}
	if old != nil && old.VPA != v.Name {
		// Another VPA's record: restored once that VPA is gone.
		return
	}
	next := &hpa.Record{VPA: v.Name}
	var recorded []string
	var changes []change
	for _, c := range conflicts {
		cur, ok := hpa.UtilizationTarget(h, c.Resource, c.Container)
		if !ok {
			continue
		}
		req, haveReq := MeanRequest(pods, c.Resource, c.Container)
		var m hpa.RecordedMetric
		if p := old.Find(c.Resource, c.Container); p != nil && (cur == p.Set || cur == p.Original) {
			m = *p
		} else {
			// Not recorded yet, or someone else set the target: it is
			// the new original, for the requests the pods have now.
			if !haveReq {
				continue
			}
			m = hpa.RecordedMetric{Resource: c.Resource, Container: c.Container, Original: cur, Request: req, Set: cur}
			recorded = append(recorded, fmt.Sprintf("%s at %d%% of %s per pod", what(c), cur, req.String()))
		}
		if haveReq {
			if want, ok := m.Target(req); ok && want != cur {
				changes = append(changes, change{c: c, from: cur, to: want})
				m.Set = want
			} else if ok {
				m.Set = cur
			}
		}
		next.Metrics = append(next.Metrics, m)
	}
	// Metrics recorded before that the VPA no longer sets get their
	// original back.
	for _, m := range recordedMetrics(old) {
		if next.Find(m.Resource, m.Container) != nil {
			continue
		}
		if cur, ok := hpa.UtilizationTarget(h, m.Resource, m.Container); ok && cur != m.Original {
			changes = append(changes, change{c: m.Conflict(h.Name), from: cur, to: m.Original})
		}
	}
	if len(next.Metrics) == 0 {
		if old != nil {
			k.restore(ctx, h, old, v)
		}
		return
	}
	annotation := next.Encode()
	if len(changes) == 0 && h.Annotations[hpa.ScalePointAnnotation] == annotation {
		return
	}
	action := ActionRetune
	if len(recorded) > 0 {
		action = ActionRecord
	}
	err = k.write(ctx, h, func(full *autoscalingv2.HorizontalPodAutoscaler) {
		if full.Annotations == nil {
			full.Annotations = map[string]string{}
		}
		full.Annotations[hpa.ScalePointAnnotation] = annotation
		for _, ch := range changes {
			hpa.SetUtilizationTarget(full, ch.c.Resource, ch.c.Container, ch.to)
		}
	})
	k.count(action, err)
	if err != nil {
		k.failed(ctx, v, h, err)
		return
	}
	if len(recorded) > 0 {
		k.Recorder.Eventf(v, corev1.EventTypeNormal, ReasonRecorded,
			"Recorded the scale point of HorizontalPodAutoscaler %s: %s; its target now follows this VPA's requests", h.Name, strings.Join(recorded, ", "))
	}
	for _, ch := range changes {
		k.Recorder.Eventf(v, corev1.EventTypeNormal, ReasonRetuned,
			"Set the target of HorizontalPodAutoscaler %s on %s from %d%% to %d%%, to keep its scale point at the pods' current requests", h.Name, what(ch.c), ch.from, ch.to)
	}
	logger.V(2).Info("Kept the scale point of an HPA", "hpa", klog.KObj(h), "vpa", klog.KObj(v), "record", annotation, "changes", len(changes))
}

// restore sets h's recorded targets back to their originals and removes the
// record. v is the VPA the record belonged to, when it still exists.
func (k *Keeper) restore(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, r *hpa.Record, v *vpav1.VerticalPodAutoscaler) {
	var parts []string
	err := k.write(ctx, h, func(full *autoscalingv2.HorizontalPodAutoscaler) {
		parts = parts[:0]
		for _, m := range r.Metrics {
			if hpa.SetUtilizationTarget(full, m.Resource, m.Container, m.Original) {
				parts = append(parts, fmt.Sprintf("%s to %d%%", what(m.Conflict(h.Name)), m.Original))
			}
		}
		delete(full.Annotations, hpa.ScalePointAnnotation)
	})
	k.count(ActionRestore, err)
	if err != nil {
		k.failed(ctx, v, h, err)
		return
	}
	msg := fmt.Sprintf("Restored the target of HorizontalPodAutoscaler %s on %s: VPA %s no longer keeps its scale point", h.Name, strings.Join(parts, ", "), r.VPA)
	k.Recorder.Event(h, corev1.EventTypeNormal, ReasonRestored, msg)
	if v != nil {
		k.Recorder.Event(v, corev1.EventTypeNormal, ReasonRestored, msg)
	}
	klog.FromContext(ctx).V(2).Info("Restored the target of an HPA", "hpa", klog.KObj(h), "vpa", r.VPA)
}

// write reads h whole, applies mutate and updates it; a conflict is tried
// again once (the next loop tries again after that).
func (k *Keeper) write(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, mutate func(*autoscalingv2.HorizontalPodAutoscaler)) error {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var full *autoscalingv2.HorizontalPodAutoscaler
		if full, err = k.Client.Get(ctx, h.Namespace, h.Name); err != nil {
			return err
		}
		mutate(full)
		if err = k.Client.Update(ctx, full); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func (k *Keeper) count(action string, err error) {
	if k.Writes == nil {
		return
	}
	result := "success"
	switch {
	case apierrors.IsForbidden(err):
		result = "forbidden"
	case err != nil:
		result = "error"
	}
	k.Writes.WithLabelValues(action, result).Inc()
}

// failed reports a write that failed, on v (nil: on h).
func (k *Keeper) failed(ctx context.Context, v *vpav1.VerticalPodAutoscaler, h *autoscalingv2.HorizontalPodAutoscaler, err error) {
	msg := fmt.Sprintf("Cannot update HorizontalPodAutoscaler %s: %v", h.Name, err)
	if apierrors.IsForbidden(err) {
		msg = fmt.Sprintf("Cannot update HorizontalPodAutoscaler %s: the updater needs get and update on horizontalpodautoscalers.autoscaling "+
			"(the kustomize component deploy/components/hpa-scale-point, or the chart's updater.hpaScalePoint); until then the VPA leaves the resource to the HPA", h.Name)
	}
	var obj runtime.Object = h
	if v != nil {
		obj = v
	}
	k.Recorder.Event(obj, corev1.EventTypeWarning, ReasonRetuneFailed, msg)
	klog.FromContext(ctx).Error(err, "Cannot keep the scale point of an HPA", "hpa", klog.KObj(h))
}

func recordedMetrics(r *hpa.Record) []hpa.RecordedMetric {
	if r == nil {
		return nil
	}
	return r.Metrics
}

func what(c hpa.Conflict) string {
	if c.Container != "" {
		return fmt.Sprintf("%s of container %s", c.Resource, c.Container)
	}
	return string(c.Resource)
}

// MeanRequest returns the mean request per pod of res over pods, summed as
// the HPA controller sums it: for a Resource metric (container ""), the
// pod-level request when the pod sets pod-level requests, else the requests
// of its containers and restartable init containers (sidecars); for a
// ContainerResource metric, that container's. A pod the HPA controller
// could not sum (a request missing) is left out. ok is false when no pod
// counts.
func MeanRequest(pods []*corev1.Pod, res corev1.ResourceName, container string) (resource.Quantity, bool) {
	var total, n int64
	for _, p := range pods {
		if v, ok := podRequest(p, res, container); ok {
			total += v
			n++
		}
	}
	if n == 0 || total <= 0 {
		return resource.Quantity{}, false
	}
	if res == corev1.ResourceCPU {
		return *resource.NewMilliQuantity((total+n/2)/n, resource.DecimalSI), true
	}
	return *resource.NewQuantity((total/n+500)/1000, resource.BinarySI), true
}

// podRequest is the pod's request in milli-units.
func podRequest(p *corev1.Pod, res corev1.ResourceName, container string) (int64, bool) {
	if container == "" && podLevelRequests(p) {
		q, ok := p.Spec.Resources.Requests[res]
		return q.MilliValue(), ok
	}
	cs := append([]corev1.Container{}, p.Spec.Containers...)
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			cs = append(cs, c)
		}
	}
	var sum int64
	for _, c := range cs {
		if container != "" && c.Name != container {
			continue
		}
		q, ok := c.Resources.Requests[res]
		if !ok {
			return 0, false
		}
		sum += q.MilliValue()
		if container != "" {
			return sum, true
		}
	}
	return sum, container == ""
}

// podLevelRequests is the API's IsPodLevelRequestsSet: the pod sets a
// pod-level request of cpu or memory.
func podLevelRequests(p *corev1.Pod) bool {
	if p.Spec.Resources == nil {
		return false
	}
	for name := range p.Spec.Resources.Requests {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			return true
		}
	}
	return false
}

// Client is the HPAClient over an autoscaling/v2 REST client
// (kubeclient.RESTClient with autoscalingv2.AddToScheme).
type Client struct {
	REST rest.Interface
}

// Get implements HPAClient.
func (c Client) Get(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	out := &autoscalingv2.HorizontalPodAutoscaler{}
	err := c.REST.Get().Namespace(namespace).Resource("horizontalpodautoscalers").Name(name).Do(ctx).Into(out)
	return out, err
}

// Update implements HPAClient.
func (c Client) Update(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler) error {
	return c.REST.Put().Namespace(h.Namespace).Resource("horizontalpodautoscalers").Name(h.Name).
		VersionedParams(&metav1.UpdateOptions{FieldManager: "vpa-updater"}, metav1.ParameterCodec).Body(h).Do(ctx).Error()
}
