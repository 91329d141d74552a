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
	"fmt"
	"slices"
	"strings"
)

// OverlapMessage is the one wording of the OverlappingVPA condition: VPA
// self's pods are also matched by the VPAs named in others, and the
// admission controller applies the VPAs named in chosen to them (as
// AdmissionChoiceAmong picks; "" in chosen stands for none). It is empty
// when others is. Names are sorted, so the message does not depend on the
// order they were found in. The recommender sets it on the condition;
// kubectl vpa explain shows it as a problem.
func OverlapMessage(self string, others, chosen []string) string {
	if len(others) == 0 {
		return ""
	}
	others = slices.Sorted(slices.Values(others))
	chosen = slices.Sorted(slices.Values(chosen))
	noun := "VPA"
	if len(others) > 1 {
		noun = "VPAs"
	}
	var applied []string
	anyNone := false
	for _, name := range chosen {
		switch name {
		case "":
			anyNone = true
		case self:
			applied = append(applied, "this VPA ("+self+")")
		default:
			applied = append(applied, "VPA "+name)
		}
	}
	var tail string
	switch {
	case len(applied) == 0:
		tail = "the admission controller applies none of them (each is in mode Off or does not target the pods' controller)"
	case len(applied) == 1 && !anyNone:
		tail = "the admission controller applies " + applied[0] + " to them"
	default:
		if anyNone {
			applied = append(applied, "none")
		}
		tail = "the admission controller applies, depending on the pod, " + strings.Join(applied, " or ")
	}
	return fmt.Sprintf("Pods of this VPA are also matched by %s %s; %s", noun, strings.Join(others, ", "), tail)
}
