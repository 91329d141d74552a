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

// Package annotations holds the names and value formats of the pod
// annotations OpenVPA reads and writes.
//
// The upstream-compatible ones keep upstream's names and formats:
//
//   - vpaUpdates: a human-readable summary the admission controller writes,
//     "Pod resources updated by <vpa>: container 0: cpu request, memory
//     request; container 1: ...". Nothing parses it.
//   - vpaObservedContainers: the pod's (non-init) containers when the
//     admission controller saw it, joined by ", ". The updater only acts on
//     containers listed here when the annotation is present.
//   - vpaInPlaceUpdated: "true" once the updater resized the pod in place.
//
// OpenVPA adds openvpa.io/original-resources: a JSON object keyed by container
// name holding the requests and limits each patched container had before the
// admission controller changed them, e.g.
//
//	{"app":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}}
//
// Only patched containers appear; a container that had no requests or limits
// appears with an empty object. It is an audit trail and a rollback path:
// `kubectl get pod -o jsonpath='{.metadata.annotations.openvpa\.io/original-resources}'`.
package annotations

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// Updates is the admission controller's summary of what it changed.
	Updates = "vpaUpdates"
	// ObservedContainers lists the containers the admission controller saw.
	ObservedContainers = "vpaObservedContainers"
	// InPlaceUpdated marks a pod the updater resized in place.
	InPlaceUpdated = "vpaInPlaceUpdated"
	// OriginalResources records the requests and limits of patched
	// containers before the admission controller changed them.
	OriginalResources = "openvpa.io/original-resources"
	// InPlaceResize holds the updater's bookkeeping of a pod's latest
	// in-place resize, a JSON object whose "started" field is when the
	// updater requested it (RFC 3339).
	InPlaceResize = "openvpa.io/in-place-resize"

	listSeparator = ", "
)

// FormatObservedContainers returns the vpaObservedContainers value for a pod:
// its containers (not init containers), in order, joined by ", ".
func FormatObservedContainers(pod *corev1.Pod) string {
	names := make([]string, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		names[i] = pod.Spec.Containers[i].Name
	}
	return strings.Join(names, listSeparator)
}

// ParseObservedContainers parses a vpaObservedContainers value. An empty value
// is an empty list. Every entry must be a DNS-1123 label (a container name).
func ParseObservedContainers(value string) ([]string, error) {
	if value == "" {
		return []string{}, nil
	}
	names := strings.Split(value, listSeparator)
	for _, n := range names {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %q is not a valid container name: %s", ObservedContainers, n, strings.Join(errs, "; "))
		}
	}
	return names, nil
}

// ObservedContainerSet returns the containers listed in the pod's
// vpaObservedContainers annotation; ok is false when the annotation is absent
// or malformed, in which case every container should be considered.
func ObservedContainerSet(pod *corev1.Pod) (set map[string]bool, ok bool) {
	v, found := pod.Annotations[ObservedContainers]
	if !found {
		return nil, false
	}
	names, err := ParseObservedContainers(v)
	if err != nil {
		return nil, false
	}
	set = make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set, true
}

// ContainerUpdate is what the admission controller did to one container, for
// FormatUpdates.
type ContainerUpdate struct {
	// Index of the container in pod.Spec.Containers.
	Index int
	// Items are shown in order, e.g. "cpu capped to maxAllowed", "cpu request",
	// "memory limit".
	Items []string
}

// FormatUpdates returns the vpaUpdates value:
// "Pod resources updated by <vpaName>: container 0: a, b; container 1: c".
func FormatUpdates(vpaName string, updates []ContainerUpdate) string {
	var b strings.Builder
	b.WriteString("Pod resources updated by ")
	b.WriteString(vpaName)
	b.WriteString(": ")
	for i, u := range updates {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "container %d: %s", u.Index, strings.Join(u.Items, listSeparator))
	}
	return b.String()
}

// Resources are the requests and limits of one container.
type Resources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}

// Original maps container names to their original resources.
type Original map[string]Resources

// EncodeOriginal returns the openvpa.io/original-resources value. Keys are
// sorted, so equal inputs give equal strings.
func EncodeOriginal(o Original) (string, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", OriginalResources, err)
	}
	return string(b), nil
}

// DecodeOriginal parses an openvpa.io/original-resources value.
func DecodeOriginal(value string) (Original, error) {
	var o Original
	if err := json.Unmarshal([]byte(value), &o); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", OriginalResources, err)
	}
	if o == nil {
		o = Original{}
	}
	return o, nil
}

// OriginalOf reads the pod's openvpa.io/original-resources annotation; ok is
// false when it is absent.
func OriginalOf(pod *corev1.Pod) (o Original, ok bool, err error) {
	v, found := pod.Annotations[OriginalResources]
	if !found {
		return nil, false, nil
	}
	o, err = DecodeOriginal(v)
	return o, err == nil, err
}
