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

package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRoom(t *testing.T) {
	node := func(name string, pods int64, taints ...corev1.Taint) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}}}
	}
	pod := func(ns, node string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	realNode := node("real", 30, corev1.Taint{Key: "openvpa.io/real-node", Value: "true", Effect: corev1.TaintEffectNoSchedule})
	nodes := []corev1.Node{node("kwok-0", 110), node("kwok-1", 110), realNode}
	tests := map[string]struct {
		pods       []corev1.Pod
		c          config
		need, free int64
	}{
		"an empty cluster: the tainted node does not count": {c: config{deployments: 100, replicas: 2}, need: 200, free: 220},
		"other pods take room, finished ones do not": {
			pods: []corev1.Pod{pod("a", "kwok-0", corev1.PodRunning), pod("a", "kwok-1", corev1.PodSucceeded), pod("a", "real", corev1.PodRunning)},
			c:    config{deployments: 10, replicas: 1}, need: 10, free: 219,
		},
		"reused workloads are not created again": {
			pods: []corev1.Pod{pod("scale", "kwok-0", corev1.PodRunning), pod("scale", "kwok-1", corev1.PodRunning), pod("other", "kwok-1", corev1.PodRunning)},
			c:    config{deployments: 2, replicas: 1, reuse: true, namespace: "scale"}, need: 0, free: 217,
		},
		"reused workloads over several namespaces": {
			pods: []corev1.Pod{pod("scale-0", "kwok-0", corev1.PodRunning), pod("scale-1", "kwok-1", corev1.PodRunning), pod("scale", "kwok-1", corev1.PodRunning)},
			c:    config{deployments: 2, replicas: 1, reuse: true, namespace: "scale", namespaces: 2}, need: 0, free: 217,
		},
		"without --reuse the namespace's pods are others": {
			pods: []corev1.Pod{pod("scale", "kwok-0", corev1.PodRunning)},
			c:    config{deployments: 2, replicas: 1, namespace: "scale"}, need: 2, free: 219,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			need, free := room(nodes, tc.pods, tc.c)
			if need != tc.need || free != tc.free {
				t.Errorf("room = need %d, free %d; want %d, %d", need, free, tc.need, tc.free)
			}
		})
	}
}
