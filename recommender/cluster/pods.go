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

package cluster

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/model"
)

// SyncPods makes the tracked pods those of list that run (not Pending) under
// some VPA, creates the container states of their containers, and notes, on
// each VPA, its pod count, a sample pod, its live containers and the other
// VPAs matching its pods. topmost (nil: none) finds the controller the
// admission controller's choice among overlapping VPAs depends on. The pods
// that left stay known to AddOOMs until DeleteRemovedPods.
func (s *State) SyncPods(ctx context.Context, list []*input.Pod, topmost TopmostFunc, now time.Time) {
	targets := make([]*target.Target, 0, len(s.vpas))
	for _, v := range s.vpas {
		v.PodCount = 0
		v.Sample = nil
		v.Live = nil // a new set: lastLive may hold the last one
		v.overlaps, v.chosen = nil, nil
		if v.Target != nil {
			targets = append(targets, v.Target)
		}
	}
	matcher := target.NewMatcher(targets)
	current := make(map[types.NamespacedName]podInfo, len(s.pods))
	tops := map[target.Ref]*target.Ref{}
	for _, pod := range list {
		if pod.Phase == corev1.PodPending || !s.cfg.Namespaces.Allows(pod.Namespace) {
			continue
		}
		sel := matcher.Selecting(pod.Namespace, pod.Labels)
		if len(sel) == 0 {
			continue // only pods under a VPA are tracked
		}
		if len(sel) > 1 {
			recordOverlap(ctx, s.vpas, pod, sel, topmost, tops)
		}
		id := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		info := podInfo{labels: pod.Labels}
		if len(pod.InitContainers) > 0 {
			info.init = map[string]struct{}{}
			for _, c := range pod.InitContainers {
				info.init[c] = struct{}{}
			}
		}
		for _, t := range sel {
			k := KeyOf(t.VPA)
			v := s.vpas[k]
			if v == nil {
				continue
			}
			info.vpas = append(info.vpas, k)
			v.PodCount++
			if v.Sample == nil || pod.Phase == corev1.PodRunning && v.Sample.Phase != corev1.PodRunning {
				v.Sample = pod
				v.LastSample = pod
			}
			for _, c := range pod.Containers {
				v.Live.add(c.Name)
				v.instance(id, c.Name, s, now)
			}
		}
		current[id] = info
	}
	s.removed = map[types.NamespacedName]podInfo{}
	for id, info := range s.pods {
		if _, ok := current[id]; !ok {
			s.removed[id] = info
		}
	}
	s.pods = current
}

// recordOverlap notes, on each VPA matching the pod, the others and the one
// the admission controller applies to the pod (target.AdmissionChoiceAmong,
// the admission controller's rule). tops caches topmost controllers for one
// SyncPods.
func recordOverlap(ctx context.Context, vpas map[types.NamespacedName]*VPA, pod *input.Pod, sel []*target.Target, topmost TopmostFunc, tops map[target.Ref]*target.Ref) {
	chosen := ""
	if topmost != nil && pod.Controller != nil {
		top, ok := tops[*pod.Controller]
		if !ok {
			var err error
			top, err = topmost(ctx, *pod.Controller)
			if err != nil {
				klog.FromContext(ctx).V(5).Info("Cannot find the pod's topmost controller", "pod", klog.KObj(pod), "err", err)
				top = nil
			}
			tops[*pod.Controller] = top
		}
		if t := target.AdmissionChoiceAmong(sel, top); t != nil {
			chosen = t.VPA.Name
		}
	}
	for _, t := range sel {
		v := vpas[KeyOf(t.VPA)]
		if v == nil {
			continue
		}
		if v.overlaps == nil {
			v.overlaps, v.chosen = map[string]struct{}{}, map[string]struct{}{}
		}
		for _, o := range sel {
			if o != t {
				v.overlaps[o.VPA.Name] = struct{}{}
			}
		}
		v.chosen[chosen] = struct{}{}
	}
}

// instance returns the container state of a pod's container under the VPA,
// creating it (and the aggregate, set as s says) when needed.
func (v *VPA) instance(pod types.NamespacedName, container string, s *State, now time.Time) *model.ContainerState {
	ik := instanceKey{pod: pod, container: container}
	if cs, ok := v.instances.get(ik); ok {
		return cs
	}
	cs := model.NewContainerState(v.aggregate(container, s, now))
	v.instances.put(ik, cs)
	return cs
}

// AddUsage feeds usage samples of tracked pods' containers (init containers
// left out, as upstream) into their container states, and returns how many
// CPU samples were accepted.
func (s *State) AddUsage(usage []input.ContainerUsage) (accepted int) {
	for _, u := range usage {
		info, ok := s.pods[u.Pod]
		if !ok {
			continue
		}
		if _, isInit := info.init[u.Container]; isInit {
			continue
		}
		for _, k := range info.vpas {
			cs, ok := s.vpas[k].instances.get(instanceKey{pod: u.Pod, container: u.Container})
			if !ok {
				continue // not a container of the pod's spec
			}
			if u.CPU >= 0 && cs.AddCPUSample(u.Time, u.CPU) {
				accepted++
			}
			if u.Memory >= 0 {
				cs.AddMemorySample(u.Time, u.Memory)
			}
		}
	}
	return accepted
}

// AddOOMs records OOM kills of the containers of tracked pods, and of pods
// that left in the last SyncPods (a pod killed and gone before the loop saw
// it again still counts).
func (s *State) AddOOMs(ctx context.Context, ooms []input.OOM) {
	logger := klog.FromContext(ctx)
	for _, o := range ooms {
		info, ok := s.pods[o.Pod]
		if !ok {
			info, ok = s.removed[o.Pod]
		}
		if !ok {
			continue
		}
		for _, k := range info.vpas {
			v := s.vpas[k]
			if v == nil {
				continue
			}
			cs, ok := v.instances.get(instanceKey{pod: o.Pod, container: o.Container})
			if !ok {
				continue
			}
			if err := cs.RecordOOM(o.Time, o.Memory); err != nil {
				logger.V(4).Info("OOM not recorded", "pod", o.Pod, "container", o.Container, "err", err)
				continue
			}
			logger.V(2).Info("Recorded OOM", "pod", o.Pod, "container", o.Container, "vpa", k)
		}
	}
}

// DeleteRemovedPods drops the container states of pods that vanished or are
// no longer under their VPA.
func (s *State) DeleteRemovedPods() {
	for _, v := range s.vpas {
		v.instances.deleteFunc(func(ik instanceKey) bool {
			info, ok := s.pods[ik.pod]
			return !ok || !slices.Contains(info.vpas, v.Key)
		})
	}
	s.removed = nil
}
