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

package annotations

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestObservedContainers(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "sidecar"}},
	}}
	if got, want := FormatObservedContainers(pod), "app, sidecar"; got != want {
		t.Fatalf("FormatObservedContainers = %q, want %q", got, want)
	}
	tests := map[string]struct {
		value   string
		want    []string
		wantErr bool
	}{
		"empty":            {value: "", want: []string{}},
		"one":              {value: "app", want: []string{"app"}},
		"two":              {value: "app, sidecar", want: []string{"app", "sidecar"}},
		"no space":         {value: "app,sidecar", wantErr: true},
		"upper case":       {value: "App", wantErr: true},
		"trailing comma":   {value: "app, ", wantErr: true},
		"injected content": {value: "app, x/y", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseObservedContainers(tc.value)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestObservedContainerSet(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        map[string]bool
		wantOK      bool
	}{
		"absent":    {},
		"malformed": {annotations: map[string]string{ObservedContainers: "A,B"}},
		"present":   {annotations: map[string]string{ObservedContainers: "a, b"}, want: map[string]bool{"a": true, "b": true}, wantOK: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ObservedContainerSet(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}})
			if ok != tc.wantOK || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestFormatUpdates(t *testing.T) {
	got := FormatUpdates("web", []ContainerUpdate{
		{Index: 0, Items: []string{"cpu capped to maxAllowed", "cpu request", "memory request"}},
		{Index: 2, Items: []string{"memory request", "memory limit"}},
	})
	want := "Pod resources updated by web: container 0: cpu capped to maxAllowed, cpu request, memory request; container 2: memory request, memory limit"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestOriginalRoundTrip(t *testing.T) {
	o := Original{
		"b":   {},
		"app": {Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
	}
	s, err := EncodeOriginal(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"app":{"requests":{"cpu":"100m"},"limits":{"memory":"1Gi"}},"b":{}}`; s != want {
		t.Errorf("encoded %s, want %s", s, want)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{OriginalResources: s}}}
	got, ok, err := OriginalOf(pod)
	if err != nil || !ok {
		t.Fatalf("OriginalOf: %v, %v", ok, err)
	}
	if q := got["app"].Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("100m")) != 0 {
		t.Errorf("decoded cpu request %s", q.String())
	}
	if _, err := DecodeOriginal(`{"app":{"requests":{"cpu":"lots"}}}`); err == nil {
		t.Error("a bad quantity decoded without error")
	}
	if _, ok, _ := OriginalOf(&corev1.Pod{}); ok {
		t.Error("absent annotation reported present")
	}
}
