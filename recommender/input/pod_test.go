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

package input

import (
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/pkg/target"
)

// TestTrimPodKeepsTheController: the controlling owner survives the trim
// (the OverlappingVPA condition names the VPA of the pod's topmost
// controller), with its API version and kind shared between pods.
func TestTrimPodKeepsTheController(t *testing.T) {
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Node", Name: "n"},
		{APIVersion: string([]byte("apps/v1")), Kind: string([]byte("ReplicaSet")), Name: "web-5d9f", Controller: &yes},
	}}}
	out, err := TrimPod(p)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*Pod).Controller
	want := &target.Ref{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: "web-5d9f"}
	if got == nil || *got != *want {
		t.Fatalf("Controller = %+v, want %+v", got, want)
	}
	if unsafe.StringData(got.Kind) != unsafe.StringData(target.KindReplicaSet) {
		t.Error("the kind is a copy of its own, not the shared string")
	}
	bare, _ := TrimPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare"}})
	if c := bare.(*Pod).Controller; c != nil {
		t.Errorf("a pod without a controller has Controller %+v", c)
	}
}

// TestTrimPodConstraints: the pod's scheduling constraints are kept as one
// interned key; a DaemonSet's pods, each pinned to its node, share the key
// of their template.
func TestTrimPodConstraints(t *testing.T) {
	yes := true
	daemonPod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: &yes}}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"pool": "a"},
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
						{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
				}}},
			},
		}
	}
	a, _ := TrimPod(daemonPod("agent-1", "n1"))
	b, _ := TrimPod(daemonPod("agent-2", "n2"))
	ka, kb := a.(*Pod).Constraints, b.(*Pod).Constraints
	if ka == "" || ka != kb {
		t.Fatalf("keys %q and %q, want one for both DaemonSet pods", ka, kb)
	}
	if unsafe.StringData(ka) != unsafe.StringData(kb) {
		t.Error("equal keys are not shared")
	}
	if a.(*Pod).DaemonSet() != "ns/agent" {
		t.Errorf("DaemonSet() = %q", a.(*Pod).DaemonSet())
	}
	pinned := daemonPod("web-1", "n1")
	pinned.OwnerReferences[0].Kind = "ReplicaSet"
	c, _ := TrimPod(pinned)
	if c.(*Pod).Constraints == ka {
		t.Error("a pod that is no DaemonSet's lost its node pin")
	}
}
