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
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// required is a required node affinity of one term per list of
// expressions.
func required(terms ...[]corev1.NodeSelectorRequirement) *corev1.NodeSelector {
	s := &corev1.NodeSelector{}
	for _, t := range terms {
		s.NodeSelectorTerms = append(s.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
	}
	return s
}

func terms(r ...corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement { return r }

func TestAllowsNodeSelectorAndAffinity(t *testing.T) {
	big := node("big", map[string]string{"pool": "big", "gpu": "true", "cores": "64"})
	small := node("small", map[string]string{"pool": "small", "cores": "4"})
	bare := node("bare", nil)
	for _, tc := range []struct {
		name string
		c    Constraints
		want []string // the nodes of big, small, bare that are allowed
	}{
		{"no constraints", Constraints{}, []string{"big", "small", "bare"}},
		{"nodeSelector", Constraints{NodeSelector: map[string]string{"pool": "big"}}, []string{"big"}},
		{"nodeSelector all labels", Constraints{NodeSelector: map[string]string{"pool": "big", "gpu": "false"}}, nil},
		{"In", Constraints{Required: required(terms(expr("pool", corev1.NodeSelectorOpIn, "big", "small")))}, []string{"big", "small"}},
		{"NotIn allows a node without the label", Constraints{Required: required(terms(expr("pool", corev1.NodeSelectorOpNotIn, "big")))}, []string{"small", "bare"}},
		{"Exists", Constraints{Required: required(terms(expr("gpu", corev1.NodeSelectorOpExists)))}, []string{"big"}},
		{"DoesNotExist", Constraints{Required: required(terms(expr("gpu", corev1.NodeSelectorOpDoesNotExist)))}, []string{"small", "bare"}},
		{"Gt", Constraints{Required: required(terms(expr("cores", corev1.NodeSelectorOpGt, "8")))}, []string{"big"}},
		{"Lt", Constraints{Required: required(terms(expr("cores", corev1.NodeSelectorOpLt, "8")))}, []string{"small"}},
		{"Gt with a value that is no integer", Constraints{Required: required(terms(expr("cores", corev1.NodeSelectorOpGt, "eight")))}, nil},
		{"Gt with two values", Constraints{Required: required(terms(expr("cores", corev1.NodeSelectorOpGt, "1", "2")))}, nil},
		{"unknown operator", Constraints{Required: required(terms(expr("cores", "Near", "8")))}, nil},
		{"expressions of a term are ANDed", Constraints{Required: required(terms(
			expr("cores", corev1.NodeSelectorOpExists), expr("gpu", corev1.NodeSelectorOpDoesNotExist)))}, []string{"small"}},
		{"terms are ORed", Constraints{Required: required(
			terms(expr("pool", corev1.NodeSelectorOpIn, "small")), terms(expr("pool", corev1.NodeSelectorOpDoesNotExist)))}, []string{"small", "bare"}},
		{"an empty term matches nothing", Constraints{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}}, nil},
		{"matchFields metadata.name", Constraints{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "bare")}}}}}, []string{"bare"}},
		{"matchFields NotIn", Constraints{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpNotIn, "bare")}}}}}, []string{"big", "small"}},
		{"matchFields of another field", Constraints{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.uid", corev1.NodeSelectorOpIn, "x")}}}}}, nil},
		{"nodeSelector and affinity both apply", Constraints{NodeSelector: map[string]string{"pool": "small"},
			Required: required(terms(expr("gpu", corev1.NodeSelectorOpExists)))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, n := range []*corev1.Node{big, small, bare} {
				if tc.c.Allows(n) {
					got = append(got, n.Name)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("allowed %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAllowsTaints(t *testing.T) {
	taint := func(key, value string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: effect}
	}
	for _, tc := range []struct {
		name        string
		taints      []corev1.Taint
		cordoned    bool
		tolerations []corev1.Toleration
		want        bool
	}{
		{"untainted", nil, false, nil, true},
		{"NoSchedule not tolerated", []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoSchedule)}, false, nil, false},
		{"NoExecute not tolerated", []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoExecute)}, false, nil, false},
		{"PreferNoSchedule never excludes", []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectPreferNoSchedule)}, false, nil, true},
		{"Equal with the value", []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoSchedule)}, false,
			[]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}, true},
		{"no operator is Equal", []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoSchedule)}, false,
			[]corev1.Toleration{{Key: "dedicated", Value: "db"}}, true},
		{"Equal with another value", []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoSchedule)}, false,
			[]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}, false},
		{"Exists on the key", []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoExecute)}, false,
			[]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}, true},
		{"Exists without a key tolerates everything", []corev1.Taint{taint("a", "1", corev1.TaintEffectNoSchedule), taint("b", "", corev1.TaintEffectNoExecute)}, false,
			[]corev1.Toleration{{Operator: corev1.TolerationOpExists}}, true},
		{"another effect", []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoExecute)}, false,
			[]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, false},
		{"every taint must be tolerated", []corev1.Taint{taint("a", "", corev1.TaintEffectNoSchedule), taint("b", "", corev1.TaintEffectNoSchedule)}, false,
			[]corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}, false},
		{"cordoned", nil, true, nil, false},
		{"cordoned, tolerated", nil, true,
			[]corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node("n", nil, tc.taints...)
			n.Spec.Unschedulable = tc.cordoned
			if got := (Constraints{Tolerations: tc.tolerations}).Allows(n); got != tc.want {
				t.Errorf("Allows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKeyRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Constraints
	}{
		{"empty", Constraints{}},
		{"everything", Constraints{
			NodeSelector: map[string]string{"b": "2", "a": "1"},
			Required:     required(terms(expr("cores", corev1.NodeSelectorOpGt, "8"))),
			Tolerations:  []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKey(tc.c.Key())
			if err != nil {
				t.Fatal(err)
			}
			if got.Key() != tc.c.Key() {
				t.Errorf("ParseKey(Key()).Key() = %q, want %q", got.Key(), tc.c.Key())
			}
		})
	}
	a := Constraints{NodeSelector: map[string]string{"a": "1", "b": "2"}}
	b := Constraints{NodeSelector: map[string]string{"b": "2", "a": "1"}}
	if a.Key() != b.Key() {
		t.Errorf("equal selectors give keys %q and %q", a.Key(), b.Key())
	}
}

func TestOf(t *testing.T) {
	req := required(terms(expr("pool", corev1.NodeSelectorOpIn, "big")))
	spec := &corev1.PodSpec{
		NodeSelector: map[string]string{"a": "1"},
		Affinity:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: req}},
		Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
	}
	got := Of(spec)
	if got.Required != req || got.NodeSelector["a"] != "1" || len(got.Tolerations) != 1 {
		t.Errorf("Of = %+v", got)
	}
	if c := Of(&corev1.PodSpec{Affinity: &corev1.Affinity{}}); c.Required != nil {
		t.Errorf("Of without node affinity has Required %v", c.Required)
	}
}
