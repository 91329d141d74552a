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

package pod

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
)

// apiServerDecode decodes a pod as the API server does.
func apiServerDecode(in []byte) (*corev1.Pod, error) {
	var p corev1.Pod
	err := sigsjson.UnmarshalCaseSensitivePreserveInts(in, &p)
	return &p, err
}

// decodedFrom is the Decoded of a pod decoded whole: its fields copied one
// by one, independently of the decoder.
func decodedFrom(p *corev1.Pod) *Decoded {
	out := &Decoded{Name: p.Name, GenerateName: p.GenerateName, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations}
	for _, o := range p.OwnerReferences {
		out.OwnerReferences = append(out.OwnerReferences, Owner{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Controller: o.Controller})
	}
	containers := func(cs []corev1.Container) []Container {
		if cs == nil {
			return nil
		}
		out := []Container{}
		for _, c := range cs {
			out = append(out, Container{Name: c.Name, RestartPolicy: c.RestartPolicy, Resources: corev1.ResourceRequirements{
				Requests: c.Resources.Requests, Limits: c.Resources.Limits, Claims: c.Resources.Claims,
			}})
		}
		return out
	}
	out.Containers = containers(p.Spec.Containers)
	out.InitContainers = containers(p.Spec.InitContainers)
	if r := p.Spec.Resources; r != nil {
		out.Resources = &corev1.ResourceRequirements{Requests: r.Requests, Limits: r.Limits, Claims: r.Claims}
	}
	out.NodeSelector = p.Spec.NodeSelector
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		out.RequiredNodeAffinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	out.Tolerations = p.Spec.Tolerations
	return out
}

// equalDecoded compares decoded pods as the patch depends on them: values,
// and which maps and lists are nil (no owner references and an empty list
// of them are the same).
func equalDecoded(a, b *Decoded) bool {
	x, _ := json.Marshal(withoutEmptyOwners(a))
	y, _ := json.Marshal(withoutEmptyOwners(b))
	return string(x) == string(y) && reflect.DeepEqual(nilMaps(a), nilMaps(b))
}

func withoutEmptyOwners(p *Decoded) *Decoded {
	c := *p
	if len(c.OwnerReferences) == 0 {
		c.OwnerReferences = nil
	}
	return &c
}

// nilMaps records which resource maps are nil, which the patch depends on
// and the JSON of ResourceRequirements (omitempty) does not show.
func nilMaps(p *Decoded) []bool {
	var out []bool
	for _, c := range append(slices.Clone(p.Containers), p.InitContainers...) {
		out = append(out, c.Resources.Requests == nil, c.Resources.Limits == nil)
	}
	if r := p.Resources; r != nil {
		out = append(out, r.Requests == nil, r.Limits == nil)
	}
	return out
}

func TestDecoderMatchesAPIServer(t *testing.T) {
	tests := map[string]string{
		"full": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","generateName":"a-","namespace":"ns","labels":{"app":"web","x":""},
			"annotations":{"k":"v"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"1","controller":true,"blockOwnerDeletion":true}]},
			"spec":{"initContainers":[{"name":"init","resources":{"requests":{"cpu":"1"}}}],"containers":[
			{"name":"app","image":"x","ports":[{"containerPort":80}],"resources":{"requests":{"cpu":"100m","memory":"100Mi"},"limits":{"cpu":"0.5"}}},
			{"name":"b","resources":{}}]},"status":{}}`,
		"nulls":        `{"metadata":{"name":null,"labels":null,"annotations":null,"ownerReferences":null},"spec":{"containers":[{"name":"a","resources":{"requests":null,"limits":{"cpu":null}}},null]}}`,
		"null pod":     `null`,
		"empty maps":   `{"metadata":{"labels":{},"annotations":{}},"spec":{"containers":[{"name":"a","resources":{"requests":{},"limits":{}}}]}}`,
		"escapes":      `{"metadata":{"labels":{"a\"b":"c\\d\u00e9\ud83d\ude00","\u0041":"\ud800"}},"spec":{"containers":[{"name":"a\/b","resources":{"requests":{"example.com\/foo":"1"}}}]}}`,
		"bare numbers": `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":2,"memory":1e3},"limits":{"cpu":" 1 "}}}]}}`,
		"claims":       `{"spec":{"containers":[{"name":"a","resources":{"claims":[{"name":"gpu","request":"r"}]}}]}}`,
		// Init containers (sidecars among them) and pod-level resources
		// count in the LimitRange and pod validation checks.
		"init containers": `{"spec":{"initContainers":[{"name":"i","restartPolicy":"Always","resources":{"requests":{"cpu":"1"},"limits":{"memory":"1Gi"}}},{"name":"j","restartPolicy":null}],"containers":[{"name":"a","restartPolicy":"Always"}]}}`,
		"pod-level":       `{"spec":{"resources":{"requests":{"cpu":"500m"},"limits":{"cpu":"1","memory":"1Gi"},"claims":[{"name":"c"}]},"containers":[{"name":"a"}]}}`,
		"pod-level null":  `{"spec":{"resources":null,"initContainers":null,"containers":[{"name":"a"}]}}`,
		"whitespace":      " {\n \"metadata\" : { \"name\" : \"x\" } ,\t\"spec\":{ \"containers\" : [ ] } } ",
		"controller off":  `{"metadata":{"ownerReferences":[{"kind":"Foo","name":"f","controller":false},{"kind":"Bar","name":"b"}]}}`,
		// Keys match exactly, as in the API server, not folded as
		// encoding/json folds them.
		"case differs": `{"metAdAtA":{"name":"x"},"metadata":{"laBels":{"a":"b"},"Name":"y"},"spec":{"Containers":[{"name":"a"}]}}`,
		// Repeated keys: the last string wins, a later null resets a map
		// or slice and leaves a string, repeated objects merge, repeated
		// arrays decode into the elements already there.
		"later null resets":       `{"metadata":{"labels":{"a":"1"},"labels":null,"name":"x","name":null,"ownerReferences":[{"kind":"K","controller":true}],"ownerReferences":null}}`,
		"repeated objects merge":  `{"metadata":{"labels":{"a":"1"}},"metadata":{"labels":{"b":"2"},"name":"n"},"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]},"spec":{}}`,
		"repeated arrays":         `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}},{"name":"b"}],"containers":[{"resources":{"requests":{"memory":"1Gi"}}}]}}`,
		"shrunk then grown array": `{"spec":{"containers":[{"name":"a"},{"name":"b"}],"containers":[{}],"containers":[{},{},{}]}}`,
		"empty array in between":  `{"spec":{"containers":[{"name":"a"},{"name":"b"}],"containers":[],"containers":[{},{}]}}`,
		"repeated owner fields":   `{"metadata":{"ownerReferences":[{"kind":"A","controller":true,"controller":null,"kind":"B"}]}}`,
		"repeated resource name":  `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1","cpu":"2"},"limits":{"cpu":"1","cpu":null}}}]}}`,
		"repeated claims":         `{"spec":{"containers":[{"name":"a","resources":{"claims":[{"name":"x","request":"r"}],"claims":[{"name":"y"}]}}]}}`,
		"repeated pod-level":      `{"spec":{"resources":{"requests":{"cpu":"1"}},"resources":{"limits":{"cpu":"2"}},"initContainers":[{"name":"i","restartPolicy":"Always"}],"initContainers":[{}]}}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			want, err := apiServerDecode([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			var d decoder
			d.reset() // a reused decoder must not leak the previous pod
			if _, err := d.decode([]byte(`{"metadata":{"name":"old","labels":{"old":"x"}},"spec":{"containers":[{"name":"o","resources":{"requests":{"cpu":"9"}}}]}}`)); err != nil {
				t.Fatal(err)
			}
			got, err := d.decode([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if w := decodedFrom(want); !equalDecoded(got, w) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(w)
				t.Errorf("decoded\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

func TestDecoderErrors(t *testing.T) {
	tests := map[string]string{
		"not JSON":          `{"metadata":`,
		"labels not a map":  `{"metadata":{"labels":5}}`,
		"name not a string": `{"metadata":{"name":5}}`,
		"bad quantity":      `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"lots"}}}]}}`,
		"containers object": `{"spec":{"containers":{}}}`,
		"pod is a string":   `"pod"`,
		// resource.Quantity parses the text between the quotes as it
		// stands, escapes included.
		"escaped digit":         `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"\u0031"}}}]}}`,
		"escaped suffix":        `{"spec":{"containers":[{"name":"a","resources":{"limits":{"memory":"1G\u0069"}}}]}}`,
		"escaped slash":         `{"spec":{"containers":[{"name":"a","resources":{"limits":{"memory":"1\/"}}}]}}`,
		"empty quantity":        `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":""}}}]}}`,
		"quantity is an object": `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":{}}}}]}}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := apiServerDecode([]byte(in)); err == nil {
				t.Fatalf("the API server decodes %s", in)
			}
			var d decoder
			if _, err := d.decode([]byte(in)); err == nil {
				t.Errorf("no error for %s", in)
			}
		})
	}
}

// FuzzDecoder checks that the decoder never panics and, wherever the API
// server's decoder (sigs.k8s.io/json into a corev1.Pod) decodes a pod, decodes
// it too and agrees on the fields the handler reads.
func FuzzDecoder(f *testing.F) {
	f.Add(`{"metadata":{"name":"a","labels":{"a":"b"},"ownerReferences":[{"kind":"ReplicaSet","name":"r","controller":true}]},"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]}}`)
	f.Add(`{"metadata":{"labels":{"a\u00e9":"\ud800x"}}}`)
	f.Add(`{"metadata":{"labels":{"a":"1"},"labels":null},"spec":{"containers":[{"name":"a"},{"name":"b"}],"containers":[{}],"containers":[{},{}]}}`)
	f.Add(`{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1\u0030"},"limits":{"cpu":" 2 "}}}]}}`)
	f.Add(`{"metadata":{"ownerReferences":[{"kind":"A","controller":true}],"ownerReferences":[{"controller":null}]}}`)
	f.Add(`{"spec":{"resources":{"requests":{"cpu":"500m"}},"initContainers":[{"name":"i","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}}],"containers":[{"name":"a"}]}}`)
	f.Add(`{"spec":{"nodeSelector":{"pool":"big"},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"cores","operator":"Gt","values":["8"]}]}]}},"podAffinity":{}},` +
		`"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},null,{"key":"a","value":"b","tolerationSeconds":null}]}}`)
	var d decoder
	f.Fuzz(func(t *testing.T, in string) {
		// Input taken as valid without checking must not panic either.
		_, _ = d.decodeChecked([]byte(in), true)
		got, err := d.decode([]byte(in))
		want, werr := apiServerDecode([]byte(in))
		if werr != nil {
			return
		}
		var tooMany *TooManyContainersError
		if errors.As(err, &tooMany) && len(want.Spec.Containers) > MaxContainers {
			return
		}
		if err != nil {
			t.Fatalf("the API server decodes %s, the decoder fails: %v", in, err)
		}
		if w := decodedFrom(want); !equalDecoded(got, w) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(w)
			t.Errorf("decoder disagrees with the API server on %s:\n%s\nwant\n%s", in, gj, wj)
		}
	})
}

func TestDecoderContainerCap(t *testing.T) {
	many := `{"spec":{"containers":[` + strings.Repeat(`{"name":"c"},`, MaxContainers) + `{"name":"last"}]}}`
	half := strings.Repeat(`{"name":"c"},`, MaxContainers/2) + `{"name":"last"}`
	tests := map[string]string{
		"containers and init containers": `{"spec":{"initContainers":[` + half + `],"containers":[` + half + `]}}`,
		"one array":                      many,
		"after a repeated key":           `{"metadata":{},"metadata":{},` + many[1:],
		"in a later repeated spec":       `{"spec":{},` + many[1:],
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			var d decoder
			_, err := d.decode([]byte(in))
			var tooMany *TooManyContainersError
			if !errors.As(err, &tooMany) {
				t.Fatalf("error %v, want a TooManyContainersError", err)
			}
		})
	}
	var d decoder
	p, err := d.decode([]byte(`{"spec":{"containers":[` + strings.Repeat(`{"name":"c"},`, MaxContainers-1) + `{"name":"last"}]}}`))
	if err != nil || len(p.Containers) != MaxContainers {
		t.Fatalf("pod of %d containers: %v", MaxContainers, err)
	}
}

// TestDecoderTrustedInvalidJSON feeds invalid JSON as if it had been
// validated: the decoder must return without panicking.
func TestDecoderTrustedInvalidJSON(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"metadata"`, `{"metadata":`, `{"metadata":{"name":"abc`, `{"metadata":{"name":"a\`, `{"metadata":{"name":"\u12`,
		`{"metadata":{"name":"\ud800\u`, `{"spec":{"containers":[`, `{"spec":{"containers":[{"resources":{"requests":{"cpu":`,
		`{"spec":{"containers":[{"resources":{"requests":{"cpu":"1"`, `{"metadata":{"labels":{"a":"b",}}}`, `{"metadata":{"ownerReferences":[{"controller":t`,
		`[`, `"`, `{"a":[{]}`, `{"metadata"}`, `{"spec":{"containers":[{"name":"a"}x]}}`,
	} {
		var d decoder
		_, _ = d.decodeChecked([]byte(in), true)
	}
}
