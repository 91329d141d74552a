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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

// The reference patch builder: operations as structs encoded by
// encoding/json. AppendPatch must produce exactly its bytes.

type refOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func refAdd(path string, value any) refOperation {
	return refOperation{Op: "add", Path: path, Value: value}
}

func refAnnotationPath(key string) string {
	return "/metadata/annotations/" + escape(key)
}

func referencePatch(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged) ([]byte, bool, error) {
	patch := make([]refOperation, 0, 8)
	if pod.Annotations == nil {
		patch = append(patch, refAdd("/metadata/annotations", map[string]string{}))
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
		base := "/spec/containers/" + strconv.Itoa(i) + "/resources"
		if c.Resources.Requests == nil && c.Resources.Limits == nil && len(c.Resources.Claims) == 0 {
			patch = append(patch, refAdd(base, map[string]any{}))
		}
		items := append([]string(nil), r.Notes...)
		patch, items = refAddResources(patch, items, base+"/requests", c.Resources.Requests, r.Requests, "request")
		patch, items = refAddResources(patch, items, base+"/limits", c.Resources.Limits, r.Limits, "limit")
		updates = append(updates, annotations.ContainerUpdate{Index: i, Items: items})
		if original == nil {
			original = annotations.Original{}
		}
		original[c.Name] = annotations.Resources{Requests: c.Resources.Requests, Limits: c.Resources.Limits}
	}
	if len(updates) > 0 {
		patch = append(patch, refAdd(refAnnotationPath(annotations.Updates), annotations.FormatUpdates(vpa.Name, updates)))
		enc, err := annotations.EncodeOriginal(original)
		if err != nil {
			return nil, false, err
		}
		patch = append(patch, refAdd(refAnnotationPath(annotations.OriginalResources), enc))
	}
	patch = append(patch, refAdd(refAnnotationPath(annotations.ObservedContainers), annotations.FormatObservedContainers(pod)))
	raw, err := json.Marshal(patch)
	return raw, len(updates) > 0, err
}

func refAddResources(patch []refOperation, items []string, path string, current, values corev1.ResourceList, kind string) ([]refOperation, []string) {
	if len(values) == 0 {
		return patch, items
	}
	if current == nil {
		patch = append(patch, refAdd(path, map[string]string{}))
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		q := values[name]
		patch = append(patch, refAdd(path+"/"+escape(string(name)), q.String()))
		items = append(items, fmt.Sprintf("%s %s", name, kind))
	}
	return patch, items
}
