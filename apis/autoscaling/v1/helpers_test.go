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

package v1

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestGetUpdateMode(t *testing.T) {
	mode := func(m UpdateMode) *UpdateMode { return &m }
	tests := []struct {
		name   string
		policy *PodUpdatePolicy
		want   UpdateMode
	}{
		{name: "no update policy defaults to Recreate", want: UpdateModeRecreate},
		{name: "no mode defaults to Recreate", policy: &PodUpdatePolicy{}, want: UpdateModeRecreate},
		{name: "empty mode defaults to Recreate", policy: &PodUpdatePolicy{UpdateMode: mode("")}, want: UpdateModeRecreate},
		{name: "Off", policy: &PodUpdatePolicy{UpdateMode: mode(UpdateModeOff)}, want: UpdateModeOff},
		{name: "InPlace", policy: &PodUpdatePolicy{UpdateMode: mode(UpdateModeInPlace)}, want: UpdateModeInPlace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vpa := &VerticalPodAutoscaler{Spec: VerticalPodAutoscalerSpec{UpdatePolicy: tc.policy}}
			if got := GetUpdateMode(vpa); got != tc.want {
				t.Errorf("GetUpdateMode() = %q, want %q", got, tc.want)
			}
		})
	}
	if got := GetUpdateMode(nil); got != UpdateModeRecreate {
		t.Errorf("GetUpdateMode(nil) = %q, want Recreate", got)
	}
}

func TestUpdateModeActions(t *testing.T) {
	tests := []struct {
		mode                 UpdateMode
		evicts, updates, new bool
	}{
		{UpdateModeOff, false, false, false},
		{UpdateModeInitial, false, false, true},
		{UpdateModeRecreate, true, true, true},
		{UpdateModeAuto, true, true, true},
		{UpdateModeInPlaceOrRecreate, true, true, true},
		{UpdateModeInPlace, false, true, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			if got := tc.mode.EvictsPods(); got != tc.evicts {
				t.Errorf("EvictsPods() = %v", got)
			}
			if got := tc.mode.UpdatesRunningPods(); got != tc.updates {
				t.Errorf("UpdatesRunningPods() = %v", got)
			}
			if got := tc.mode.PatchesNewPods(); got != tc.new {
				t.Errorf("PatchesNewPods() = %v", got)
			}
		})
	}
}

func TestGetContainerResourcePolicy(t *testing.T) {
	off := ContainerScalingModeOff
	policy := &PodResourcePolicy{ContainerPolicies: []ContainerResourcePolicy{
		{ContainerName: "*", ControlledResources: &[]corev1.ResourceName{corev1.ResourceCPU}},
		{ContainerName: "sidecar", Mode: &off},
	}}
	tests := []struct {
		name      string
		container string
		policy    *PodResourcePolicy
		wantName  string
		wantMode  ContainerScalingMode
		wantCPU   bool
		wantMem   bool
	}{
		{name: "exact name wins over *", container: "sidecar", policy: policy, wantName: "sidecar", wantMode: ContainerScalingModeOff, wantCPU: true, wantMem: true},
		{name: "falls back to *", container: "app", policy: policy, wantName: "*", wantMode: ContainerScalingModeAuto, wantCPU: true, wantMem: false},
		{name: "no policy", container: "app", wantMode: ContainerScalingModeAuto, wantCPU: true, wantMem: true},
		{name: "no matching policy", container: "app", policy: &PodResourcePolicy{ContainerPolicies: []ContainerResourcePolicy{{ContainerName: "other"}}}, wantMode: ContainerScalingModeAuto, wantCPU: true, wantMem: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := GetContainerResourcePolicy(tc.container, tc.policy)
			if (got == nil) != (tc.wantName == "") || (got != nil && got.ContainerName != tc.wantName) {
				t.Fatalf("GetContainerResourcePolicy() = %+v, want policy %q", got, tc.wantName)
			}
			if m := got.ScalingMode(); m != tc.wantMode {
				t.Errorf("ScalingMode() = %q, want %q", m, tc.wantMode)
			}
			if c := got.Controls(corev1.ResourceCPU); c != tc.wantCPU {
				t.Errorf("Controls(cpu) = %v, want %v", c, tc.wantCPU)
			}
			if c := got.Controls(corev1.ResourceMemory); c != tc.wantMem {
				t.Errorf("Controls(memory) = %v, want %v", c, tc.wantMem)
			}
		})
	}
}

func TestContainerPolicyDefaults(t *testing.T) {
	var p *ContainerResourcePolicy
	if got := p.ControlledValuesOrDefault(); got != ContainerControlledValuesRequestsAndLimits {
		t.Errorf("ControlledValuesOrDefault() = %q", got)
	}
	if got := p.ControlledResourcesOrDefault(); !reflect.DeepEqual(got, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}) {
		t.Errorf("ControlledResourcesOrDefault() = %v", got)
	}
	only := ContainerControlledValuesRequestsOnly
	if got := (&ContainerResourcePolicy{ControlledValues: &only}).ControlledValuesOrDefault(); got != only {
		t.Errorf("ControlledValuesOrDefault() = %q", got)
	}
}

func TestSelectsRecommender(t *testing.T) {
	tests := []struct {
		name        string
		recommender string
		listed      []*VerticalPodAutoscalerRecommenderSelector
		want        bool
	}{
		{name: "default handles an empty list", recommender: "default", want: true},
		{name: "others skip an empty list", recommender: "frugal", want: false},
		{name: "default handles a list naming it", recommender: "default", listed: []*VerticalPodAutoscalerRecommenderSelector{{Name: "default"}}, want: true},
		{name: "default skips a list naming another", recommender: "default", listed: []*VerticalPodAutoscalerRecommenderSelector{{Name: "frugal"}}, want: false},
		{name: "named recommender handles a list naming it", recommender: "frugal", listed: []*VerticalPodAutoscalerRecommenderSelector{nil, {Name: "frugal"}}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vpa := &VerticalPodAutoscaler{Spec: VerticalPodAutoscalerSpec{Recommenders: tc.listed}}
			if got := vpa.SelectsRecommender(tc.recommender); got != tc.want {
				t.Errorf("SelectsRecommender(%q) = %v, want %v", tc.recommender, got, tc.want)
			}
		})
	}
}
