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

package target

import (
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func admissionVPA(name string, age time.Duration, mode vpav1.UpdateMode) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}
}

func TestAdmissionChoice(t *testing.T) {
	old := admissionVPA("old", time.Hour, vpav1.UpdateModeRecreate)
	young := admissionVPA("young", time.Minute, vpav1.UpdateModeInitial)
	oldOff := admissionVPA("old-off", 2*time.Hour, vpav1.UpdateModeOff)
	twinA := admissionVPA("a", time.Minute, vpav1.UpdateModeRecreate)
	twinB := admissionVPA("b", time.Minute, vpav1.UpdateModeRecreate)
	tests := map[string]struct {
		candidates []*vpav1.VerticalPodAutoscaler
		matching   map[string]bool // nil: every VPA matches
		want       *vpav1.VerticalPodAutoscaler
	}{
		"the older wins":              {candidates: []*vpav1.VerticalPodAutoscaler{young, old}, want: old},
		"Off is passed over":          {candidates: []*vpav1.VerticalPodAutoscaler{oldOff, young}, want: young},
		"only Off":                    {candidates: []*vpav1.VerticalPodAutoscaler{oldOff}},
		"same age, the smaller name":  {candidates: []*vpav1.VerticalPodAutoscaler{twinB, twinA}, want: twinA},
		"the older does not match":    {candidates: []*vpav1.VerticalPodAutoscaler{old, young}, matching: map[string]bool{"young": true}, want: young},
		"nothing":                     {},
		"nil entries are passed over": {candidates: []*vpav1.VerticalPodAutoscaler{nil, young}, want: young},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var matches func(*vpav1.VerticalPodAutoscaler) bool
			if tc.matching != nil {
				matches = func(v *vpav1.VerticalPodAutoscaler) bool { return tc.matching[v.Name] }
			}
			if got := AdmissionChoice(tc.candidates, matches); got != tc.want {
				t.Errorf("AdmissionChoice = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAdmissionChoiceAmong(t *testing.T) {
	old := admissionVPA("old", time.Hour, vpav1.UpdateModeRecreate)
	young := admissionVPA("young", time.Minute, vpav1.UpdateModeRecreate)
	other := admissionVPA("other", 2*time.Hour, vpav1.UpdateModeRecreate)
	other.Spec.TargetRef.Name = "api"
	sel := labels.Everything()
	targets := []*Target{
		{VPA: other, Ref: RefFromTargetRef("ns", other.Spec.TargetRef), Selector: sel},
		{VPA: young, Ref: RefFromTargetRef("ns", young.Spec.TargetRef), Selector: sel},
		{VPA: old, Ref: RefFromTargetRef("ns", old.Spec.TargetRef), Selector: sel},
	}
	if got := AdmissionChoiceAmong(targets, &Ref{Kind: "Deployment", Namespace: "ns", Name: "web"}); got == nil || got.VPA != old {
		t.Errorf("AdmissionChoiceAmong for web = %v, want old", got)
	}
	if got := AdmissionChoiceAmong(targets, &Ref{Kind: "Deployment", Namespace: "ns", Name: "api"}); got == nil || got.VPA != other {
		t.Errorf("AdmissionChoiceAmong for api = %v, want other", got)
	}
	if got := AdmissionChoiceAmong(targets, nil); got != nil {
		t.Errorf("AdmissionChoiceAmong without a controller = %v, want nil", got)
	}
}
