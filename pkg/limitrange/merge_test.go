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

package limitrange

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/pkg/testbuild"
)

func cm(cpu, mem string) corev1.ResourceList { return testbuild.Resources(cpu, mem) }

// sameQuantities compares resource lists by value, not by representation.
func sameQuantities(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func TestMerge(t *testing.T) {
	lrs := []*corev1.LimitRange{
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypeContainer, Min: cm("100m", "10Mi"), Max: cm("2", "2Gi"), Default: cm("1", "1Gi")},
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypeContainer, Min: cm("50m", "20Mi"), Max: cm("4", "1Gi"), Default: cm("500m", "")},
			{Type: corev1.LimitTypePod, Max: cm("8", "")},
			{Type: corev1.LimitTypePersistentVolumeClaim, Max: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}},
	}
	got := Merge(lrs)
	if got.Container == nil || got.Pod == nil {
		t.Fatalf("got %+v, want both items", got)
	}
	if want := cm("100m", "20Mi"); !sameQuantities(got.Container.Min, want) {
		t.Errorf("min = %v, want highest %v", got.Container.Min, want)
	}
	if want := cm("2", "1Gi"); !sameQuantities(got.Container.Max, want) {
		t.Errorf("max = %v, want lowest %v", got.Container.Max, want)
	}
	if want := cm("1", "1Gi"); !sameQuantities(got.Container.Default, want) {
		t.Errorf("default = %v, want the one of the last LimitRange by name %v", got.Container.Default, want)
	}
	if want := cm("8", ""); !sameQuantities(got.Pod.Max, want) {
		t.Errorf("pod max = %v, want %v", got.Pod.Max, want)
	}
	if empty := Merge(nil); empty.Container != nil || empty.Pod != nil {
		t.Errorf("no LimitRanges gave %+v", empty)
	}
}
