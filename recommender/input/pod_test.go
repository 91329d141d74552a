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
