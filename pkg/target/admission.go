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
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// AppliesAtAdmission reports whether the admission controller considers vpa
// for the pods it admits: every update mode but Off.
func AppliesAtAdmission(vpa *vpav1.VerticalPodAutoscaler) bool {
	return vpav1.GetUpdateMode(vpa) != vpav1.UpdateModeOff
}

// AdmissionChoice is the admission controller's rule for a pod that several
// VPAs may control. candidates are the VPAs whose targetRef names the pod's
// topmost controller; matches reports whether a VPA's selector matches the
// pod (it is called only for a VPA that would win, so a selector that is
// costly to read is read only when it matters). VPAs in mode Off are passed
// over, and among the rest the Stronger one that matches wins. It returns
// nil when none does.
func AdmissionChoice(candidates []*vpav1.VerticalPodAutoscaler, matches func(*vpav1.VerticalPodAutoscaler) bool) *vpav1.VerticalPodAutoscaler {
	return AdmissionChoiceWith(candidates, AppliesAtAdmission, matches)
}

// AdmissionChoiceWith is AdmissionChoice with the VPAs considered decided by
// applies instead of AppliesAtAdmission (with the CPUStartupBoost gate, a VPA
// in mode Off that boosts applies too).
func AdmissionChoiceWith(candidates []*vpav1.VerticalPodAutoscaler, applies, matches func(*vpav1.VerticalPodAutoscaler) bool) *vpav1.VerticalPodAutoscaler {
	var best *vpav1.VerticalPodAutoscaler
	for _, vpa := range candidates {
		if vpa == nil || !applies(vpa) {
			continue
		}
		if best != nil && !Stronger(vpa, best) {
			continue
		}
		if matches == nil || matches(vpa) {
			best = vpa
		}
	}
	return best
}

// AdmissionChoiceAmong returns the Target the admission controller applies
// to a pod whose topmost controller is podController, among targets whose
// selectors match the pod (Matcher.Selecting): AdmissionChoice over those
// whose targetRef names podController. nil when podController is nil or none
// qualifies.
func AdmissionChoiceAmong(selecting []*Target, podController *Ref) *Target {
	if podController == nil {
		return nil
	}
	var candidates []*vpav1.VerticalPodAutoscaler
	byVPA := map[*vpav1.VerticalPodAutoscaler]*Target{}
	for _, t := range selecting {
		if t == nil || t.VPA == nil || t.Ref.Kind != podController.Kind || t.Ref.Name != podController.Name {
			continue
		}
		candidates = append(candidates, t.VPA)
		byVPA[t.VPA] = t
	}
	return byVPA[AdmissionChoice(candidates, nil)]
}
