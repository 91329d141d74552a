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

// Package inplace resizes running pods through the pods/resize subresource
// and keeps the updater's bookkeeping of each resize on the pod itself, in
// the openvpa.io/in-place-resize annotation, so that a restarted updater
// neither repeats an infeasible resize nor restarts the fallback timers.
package inplace

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/sidecar"
)

// Annotation holds a Record as JSON.
const Annotation = annotations.InPlaceResize

// FieldManager names the updater's writes.
const FieldManager = "vpa-updater"

// Record is the updater's bookkeeping of the latest resize of a pod.
type Record struct {
	// Started is when the updater requested the resize, or first saw a resize
	// it had not requested.
	Started metav1.Time `json:"started"`
	// Generation is the pod's metadata.generation after that resize; a
	// different generation means the record is about an older resize.
	Generation int64 `json:"generation,omitempty"`
	// Requests are the requested container requests, by container name.
	Requests map[string]corev1.ResourceList `json:"requests,omitempty"`
	// Infeasible is set once the resize was reported Infeasible.
	Infeasible bool `json:"infeasible,omitempty"`
}

// Read returns the pod's record. ok is false when there is none or it does
// not parse.
func Read(pod *corev1.Pod) (rec Record, ok bool) {
	v, found := pod.Annotations[Annotation]
	if !found {
		return Record{}, false
	}
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return Record{}, false
	}
	return rec, true
}

// Current reports whether the record describes the pod's current resize.
func (r Record) Current(pod *corev1.Pod) bool {
	return r.Generation == 0 || pod.Generation == 0 || r.Generation == pod.Generation
}

// ResizeStarted returns when the pod's current resize started, if recorded.
func ResizeStarted(pod *corev1.Pod) (time.Time, bool) {
	rec, ok := Read(pod)
	if !ok || !rec.Current(pod) {
		return time.Time{}, false
	}
	return rec.Started.Time, true
}

// InfeasibleRulesOut reports whether an infeasible attempt in rec rules out
// the new requests: it does unless some new request is lower than the
// attempted one.
func InfeasibleRulesOut(rec Record, newRequests map[string]corev1.ResourceList) bool {
	if !rec.Infeasible {
		return false
	}
	for container, attempted := range rec.Requests {
		for name, q := range attempted {
			if n, ok := newRequests[container][name]; ok && n.Cmp(q) < 0 {
				return false
			}
		}
	}
	return true
}

// PodPatcher patches pods of one namespace, subresources included: the
// typed pod client of kubeclient.Clients in the updater.
type PodPatcher interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
}

// Client writes resizes and records.
type Client struct {
	// Pods returns the patcher of a namespace's pods.
	Pods func(namespace string) PodPatcher
}

// Resize patches pods/resize with the given per-container resources (same
// index as pod.Spec.Containers, or as the containers of sidecar.View(pod)
// when there are more; only containers in observed, when observed is
// non-nil) and then records the attempt on the pod. It returns the requests
// it asked for. With nothing to change it returns an error.
func (c Client) Resize(ctx context.Context, pod *corev1.Pod, resources []recommendation.ContainerResources, observed map[string]bool, now time.Time) (map[string]corev1.ResourceList, error) {
	rp := newResizePatch(pod, resources)
	requested := map[string]corev1.ResourceList{}
	for i, r := range resources {
		if len(r.Requests) == 0 {
			continue
		}
		name, ok := rp.name(i)
		if !ok || (observed != nil && !observed[name]) {
			continue
		}
		rp.add(i, r)
		requested[name] = r.Requests
	}
	if rp.empty() {
		return nil, fmt.Errorf("no resource patches were calculated to apply")
	}
	// The resources before the first resize are recorded before it: the
	// updater plans from them (recommendation.Baseline), and a loop that saw
	// the resized pod without them would plan from the resized values and
	// resize again.
	if orig := originals(rp.view, requested); orig != "" {
		if err := c.patchAnnotations(ctx, pod, map[string]string{annotations.OriginalResources: orig}); err != nil {
			return nil, fmt.Errorf("recording the original resources: %w", err)
		}
	}
	patch, err := rp.marshal()
	if err != nil {
		return nil, err
	}
	resized, err := c.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, "resize")
	if err != nil {
		return nil, err
	}
	rec := Record{Started: metav1.NewTime(now), Generation: resized.Generation, Requests: requested}
	if err := c.writeRecord(ctx, pod, rec, true); err != nil {
		return requested, fmt.Errorf("resized, but recording the resize: %w", err)
	}
	return requested, nil
}

// resizePatch builds the strategic merge patch of a pods/resize request for
// resources given per container of the pod's sidecar.View: containers go
// under spec.containers, native sidecars under spec.initContainers.
type resizePatch struct {
	pod, view            *corev1.Pod
	containers, initCtrs []resizeContainer
}

type resizeContainer struct {
	Name      string          `json:"name"`
	Resources resizeResources `json:"resources"`
}

type resizeResources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}

func newResizePatch(pod *corev1.Pod, resources []recommendation.ContainerResources) *resizePatch {
	view := pod
	if len(resources) > len(pod.Spec.Containers) {
		view = sidecar.View(pod)
	}
	return &resizePatch{pod: pod, view: view}
}

// name returns the name of container i of the view.
func (p *resizePatch) name(i int) (string, bool) {
	if i >= len(p.view.Spec.Containers) {
		return "", false
	}
	return p.view.Spec.Containers[i].Name, true
}

func (p *resizePatch) add(i int, r recommendation.ContainerResources) {
	c := resizeContainer{Name: p.view.Spec.Containers[i].Name, Resources: resizeResources{Requests: r.Requests, Limits: r.Limits}}
	if i < len(p.pod.Spec.Containers) {
		p.containers = append(p.containers, c)
	} else {
		p.initCtrs = append(p.initCtrs, c)
	}
}

func (p *resizePatch) empty() bool { return len(p.containers) == 0 && len(p.initCtrs) == 0 }

func (p *resizePatch) marshal() ([]byte, error) {
	spec := map[string]any{}
	if len(p.containers) > 0 {
		spec["containers"] = p.containers
	}
	if len(p.initCtrs) > 0 {
		spec["initContainers"] = p.initCtrs
	}
	return json.Marshal(map[string]any{"spec": spec})
}

// RecordSeen records that the updater first saw the pod's current resize
// now, unless that is already recorded.
func (c Client) RecordSeen(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	if rec, ok := Read(pod); ok && rec.Current(pod) {
		return nil
	}
	return c.writeRecord(ctx, pod, Record{Started: metav1.NewTime(now), Generation: pod.Generation, Requests: specRequests(pod)}, false)
}

// MarkInfeasible records that the pod's current resize was reported
// infeasible, with the requests it asked for.
// It returns the record now on the pod.
func (c Client) MarkInfeasible(ctx context.Context, pod *corev1.Pod, now time.Time) (Record, error) {
	rec, ok := Read(pod)
	if ok && rec.Current(pod) && rec.Infeasible {
		return rec, nil
	}
	if !ok || !rec.Current(pod) {
		rec = Record{Started: metav1.NewTime(now), Generation: pod.Generation}
	}
	rec.Infeasible = true
	rec.Requests = specRequests(pod)
	return rec, c.writeRecord(ctx, pod, rec, false)
}

// MarkRefused records that the API server refused a resize to requests
// because the pod cannot fit its node (Forbidden with a NodeCapacity cause,
// Kubernetes 1.36 and later). The pod did not change, so the record holds
// the refused requests and the pod's unchanged generation: an InPlace VPA
// skips the pod until its recommendation lowers some request below them, as
// after a resize the kubelet reported Infeasible.
func (c Client) MarkRefused(ctx context.Context, pod *corev1.Pod, requests map[string]corev1.ResourceList, now time.Time) (Record, error) {
	rec := Record{Started: metav1.NewTime(now), Generation: pod.Generation, Requests: requests, Infeasible: true}
	return rec, c.writeRecord(ctx, pod, rec, false)
}

// originals returns the openvpa.io/original-resources value after a resize
// of the containers in resized: the annotation as it is, plus the resources
// before this resize of every resized container it does not record yet. It
// returns "" when the annotation needs no change (or does not decode, and
// is left alone).
func originals(pod *corev1.Pod, resized map[string]corev1.ResourceList) string {
	orig, ok, err := annotations.OriginalOf(pod)
	if err != nil {
		return ""
	}
	if !ok {
		orig = annotations.Original{}
	}
	added := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if _, done := orig[c.Name]; done {
			continue
		}
		if _, ok := resized[c.Name]; !ok {
			continue
		}
		orig[c.Name] = annotations.Resources{Requests: c.Resources.Requests, Limits: c.Resources.Limits}
		added = true
	}
	if !added {
		return ""
	}
	v, err := annotations.EncodeOriginal(orig)
	if err != nil {
		return ""
	}
	return v
}

// writeRecord writes rec on the pod and, with updated, marks the pod
// updated in place.
func (c Client) writeRecord(ctx context.Context, pod *corev1.Pod, rec Record, updated bool) error {
	value, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ann := map[string]string{Annotation: string(value)}
	if updated {
		ann[annotations.InPlaceUpdated] = "true"
	}
	return c.patchAnnotations(ctx, pod, ann)
}

// patchAnnotations sets annotations on the pod with a merge patch.
func (c Client) patchAnnotations(ctx context.Context, pod *corev1.Pod, ann map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	_, err = c.Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// specRequests returns the requests in the pod spec, which a resize sets.
func specRequests(pod *corev1.Pod) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		if len(c.Resources.Requests) > 0 {
			out[c.Name] = c.Resources.Requests.DeepCopy()
		}
	}
	return out
}

// Describe renders requests as "app: cpu 200m, memory 100Mi; side: ...".
func Describe(requests map[string]corev1.ResourceList) string {
	names := make([]string, 0, len(requests))
	for n := range requests {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		var rs []string
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := requests[n][r]; ok {
				rs = append(rs, fmt.Sprintf("%s %s", r, q.String()))
			}
		}
		parts = append(parts, n+": "+strings.Join(rs, ", "))
	}
	return strings.Join(parts, "; ")
}

// Unboost ends the CPU startup boost of a pod: it resizes the containers
// given resources (indexed as in Resize; empty entries are left alone) through pods/resize, then removes the boost annotations named in
// boosted and marks the pod updated in place. A container given nothing
// (its resources before the boost cannot be restored, e.g. it had no CPU
// request) only loses its annotation.
func (c Client) Unboost(ctx context.Context, pod *corev1.Pod, resources []recommendation.ContainerResources, boosted []string) error {
	rp := newResizePatch(pod, resources)
	for i, r := range resources {
		if _, ok := rp.name(i); ok && (len(r.Requests) > 0 || len(r.Limits) > 0) {
			rp.add(i, r)
		}
	}
	ann := map[string]any{}
	if !rp.empty() {
		patch, err := rp.marshal()
		if err != nil {
			return err
		}
		if _, err := c.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager}, "resize"); err != nil {
			return err
		}
		ann[annotations.InPlaceUpdated] = "true"
	}
	for _, k := range boosted {
		ann[k] = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	if _, err := c.Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("removing the startup boost annotations: %w", err)
	}
	return nil
}
