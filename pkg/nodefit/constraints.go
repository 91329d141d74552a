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

package nodefit

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Constraints are the parts of a pod spec that decide which nodes the pod
// may be scheduled on, as far as node fit reads them: the nodeSelector, the
// required node affinity and the tolerations. Preferred affinity, pod
// (anti-)affinity and topology spread constraints narrow where a pod goes
// but never make a node too small, so they are not read.
type Constraints struct {
	NodeSelector map[string]string `json:"s,omitempty"`
	// Required is the pod's
	// affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution;
	// nil when it has none.
	Required    *corev1.NodeSelector `json:"r,omitempty"`
	Tolerations []corev1.Toleration  `json:"t,omitempty"`
}

// Of returns the constraints of a pod spec. They share the spec's maps and
// slices.
func Of(spec *corev1.PodSpec) Constraints {
	c := Constraints{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		c.Required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return c
}

// Key is a canonical text of the constraints: pods of one template have
// the same key, and the nodes a key allows are computed once per key
// (Cache.Rooms). ParseKey reads it back.
func (c Constraints) Key() string {
	if len(c.NodeSelector) == 0 && c.Required == nil && len(c.Tolerations) == 0 {
		return ""
	}
	// Maps are written with sorted keys, so the text does not depend on
	// map order. The fields hold only strings and numbers: it cannot fail.
	b, _ := json.Marshal(c)
	return string(b)
}

// ParseKey returns the constraints a Key was made from.
func ParseKey(key string) (Constraints, error) {
	var c Constraints
	if key == "" {
		return c, nil
	}
	err := json.Unmarshal([]byte(key), &c)
	return c, err
}

// UnschedulableTaint is the taint the scheduler reads into a cordoned node
// (spec.unschedulable), whether or not the node carries it.
var UnschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// Allows reports whether a pod with these constraints may be scheduled on
// node, as far as the node's labels and taints go: the nodeSelector
// matches, some term of the required node affinity matches, and every
// NoSchedule or NoExecute taint (the unschedulable mark included) is
// tolerated. PreferNoSchedule taints never exclude a node.
func (c Constraints) Allows(node *corev1.Node) bool {
	for k, v := range c.NodeSelector {
		if have, ok := node.Labels[k]; !ok || have != v {
			return false
		}
	}
	if c.Required != nil && !matchesSelector(c.Required, node) {
		return false
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !Tolerated(c.Tolerations, t) {
			return false
		}
	}
	if node.Spec.Unschedulable && !Tolerated(c.Tolerations, &UnschedulableTaint) {
		return false
	}
	return true
}

// Tolerated reports whether some toleration tolerates the taint: the same
// effect (an empty effect tolerates every effect), the same key (an empty
// key with operator Exists tolerates every key), and for operator Equal
// (or none) the same value.
func Tolerated(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerates(&tolerations[i], taint) {
			return true
		}
	}
	return false
}

func tolerates(t *corev1.Toleration, taint *corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return t.Key != "" && t.Value == taint.Value
	}
	return false
}

// matchesSelector reports whether some term of a required node affinity
// matches the node. Terms are ORed, the requirements of a term ANDed; a term
// without requirements, or with one that is not valid, matches no node.
func matchesSelector(s *corev1.NodeSelector, node *corev1.Node) bool {
	for i := range s.NodeSelectorTerms {
		if matchesTerm(&s.NodeSelectorTerms[i], node) {
			return true
		}
	}
	return false
}

func matchesTerm(t *corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	for i := range t.MatchExpressions {
		r := &t.MatchExpressions[i]
		v, has := node.Labels[r.Key]
		if !matchesRequirement(r, v, has) {
			return false
		}
	}
	for i := range t.MatchFields {
		r := &t.MatchFields[i]
		// metadata.name is the only field a node selector may name, with
		// In or NotIn and one value.
		if r.Key != "metadata.name" || (r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn) || len(r.Values) != 1 {
			return false
		}
		if !matchesRequirement(r, node.Name, true) {
			return false
		}
	}
	return true
}

// matchesRequirement is one requirement against a node's value for its key
// (has: whether the node has the key at all).
func matchesRequirement(r *corev1.NodeSelectorRequirement, value string, has bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !has || !contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return has && len(r.Values) == 0
	case corev1.NodeSelectorOpDoesNotExist:
		return !has && len(r.Values) == 0
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !has || len(r.Values) != 1 {
			return false
		}
		want, err := strconv.ParseInt(r.Values[0], 10, 64)
		if err != nil {
			return false
		}
		got, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return got > want
		}
		return got < want
	}
	return false
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}
