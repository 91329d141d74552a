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

package sidecar

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestView(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always}, {Name: "migrate"}, {Name: "log", RestartPolicy: &always}},
			Containers:     []corev1.Container{{Name: "app"}},
		},
		Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup"}, {Name: "proxy", RestartCount: 2}, {Name: "migrate"}, {Name: "log"}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "app"}},
		},
	}
	v := View(pod)
	names := func(cs []corev1.Container) (out []string) {
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	if got, want := names(v.Spec.Containers), []string{"app", "proxy", "log"}; !equal(got, want) {
		t.Errorf("containers %v, want %v", got, want)
	}
	if got, want := names(v.Spec.InitContainers), []string{"setup", "migrate"}; !equal(got, want) {
		t.Errorf("init containers %v, want %v", got, want)
	}
	if len(v.Status.ContainerStatuses) != 3 || v.Status.ContainerStatuses[1].RestartCount != 2 || len(v.Status.InitContainerStatuses) != 2 {
		t.Errorf("statuses %+v", v.Status)
	}
	if got, want := Indexes(pod), []int{1, 3}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Indexes = %v, want %v", got, want)
	}
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 4 || len(pod.Status.ContainerStatuses) != 1 {
		t.Error("View changed the pod")
	}
	plain := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "setup"}}, Containers: []corev1.Container{{Name: "app"}}}}
	if View(plain) != plain {
		t.Error("a pod without native sidecars is not returned as it is")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
