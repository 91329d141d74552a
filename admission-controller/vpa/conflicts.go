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

package vpa

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/target"
)

// Conflicts are the caches the warnings on a new VPA read: the namespace's
// VPAs and HorizontalPodAutoscalers. Either may be nil.
type Conflicts struct {
	VPAs func(namespace string) []*vpav1.VerticalPodAutoscaler
	HPAs func(namespace string) []*autoscalingv2.HorizontalPodAutoscaler
	// Now stamps the new VPA's creation for the admission choice; nil
	// means time.Now.
	Now func() time.Time
}

// WithConflicts makes Admit warn, when a VPA is created, about other VPAs
// on the same target and HPAs scaling it on cpu or memory. The recommender's
// OverlappingVPA and HPAConflict conditions report the same, from the pods,
// once it runs.
func (v *Validator) WithConflicts(c Conflicts) *Validator {
	v.conflicts = &c
	return v
}

// conflictWarnings returns the warnings for a VPA being created.
func (c *Conflicts) conflictWarnings(vpa *vpav1.VerticalPodAutoscaler) []string {
	if c == nil || vpa.Spec.TargetRef == nil {
		return nil
	}
	var out []string
	if c.VPAs != nil {
		if w := c.overlapWarning(vpa); w != "" {
			out = append(out, w)
		}
	}
	if c.HPAs != nil {
		if m := hpa.Message(vpa, hpa.Conflicts(vpa, c.HPAs(vpa.Namespace), nil)); m != "" {
			out = append(out, "VPA "+vpa.Name+": "+m)
		}
	}
	return out
}

// overlapWarning names the VPAs that already target the same object and the
// one the admission controller will apply to its pods, by its own rule
// (target.AdmissionChoice) with the new VPA the youngest.
func (c *Conflicts) overlapWarning(vpa *vpav1.VerticalPodAutoscaler) string {
	ref := vpa.Spec.TargetRef
	self := vpa.DeepCopy()
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if self.CreationTimestamp.IsZero() {
		self.CreationTimestamp = metav1.NewTime(now())
	}
	candidates := []*vpav1.VerticalPodAutoscaler{self}
	var others []string
	for _, o := range c.VPAs(vpa.Namespace) {
		if o.Name == vpa.Name || o.Spec.TargetRef == nil || o.Spec.TargetRef.Kind != ref.Kind || o.Spec.TargetRef.Name != ref.Name {
			continue
		}
		others = append(others, o.Name)
		candidates = append(candidates, o)
	}
	if len(others) == 0 {
		return ""
	}
	slices.Sort(others)
	noun := "VPA %s also targets"
	if len(others) > 1 {
		noun = "VPAs %s also target"
	}
	applied := "none of them (each is in mode Off)"
	switch chosen := target.AdmissionChoice(candidates, nil); {
	case chosen == self:
		applied = "this VPA"
	case chosen != nil:
		applied = "VPA " + chosen.Name
	}
	return fmt.Sprintf("VPA %s: %s %s/%s; the admission controller applies %s to its pods",
		vpa.Name, fmt.Sprintf(noun, strings.Join(others, ", ")), ref.Kind, ref.Name, applied)
}
