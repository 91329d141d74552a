package pod

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// handledFields keeps the fields of a pod the decoder fills.
func handledFields(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, GenerateName: p.GenerateName, Namespace: p.Namespace,
		Labels: p.Labels, Annotations: p.Annotations,
	}}
	for _, o := range p.OwnerReferences {
		out.OwnerReferences = append(out.OwnerReferences, metav1.OwnerReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Controller: o.Controller})
	}
	for _, c := range p.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{
			Requests: c.Resources.Requests, Limits: c.Resources.Limits, Claims: c.Resources.Claims,
		}})
	}
	if p.Spec.Containers != nil && out.Spec.Containers == nil {
		out.Spec.Containers = []corev1.Container{}
	}
	return out
}

func equalPods(a, b *corev1.Pod) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y) && (a.Annotations == nil) == (b.Annotations == nil) && (a.Labels == nil) == (b.Labels == nil) &&
		reflect.DeepEqual(nilMaps(a), nilMaps(b))
}

// nilMaps records which resource maps are nil, which the patch depends on.
func nilMaps(p *corev1.Pod) []bool {
	var out []bool
	for _, c := range p.Spec.Containers {
		out = append(out, c.Resources.Requests == nil, c.Resources.Limits == nil)
	}
	return out
}

func TestDecoderMatchesEncodingJSON(t *testing.T) {
	tests := map[string]string{
		"full": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","generateName":"a-","namespace":"ns","labels":{"app":"web","x":""},
			"annotations":{"k":"v"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"1","controller":true,"blockOwnerDeletion":true}]},
			"spec":{"initContainers":[{"name":"init","resources":{"requests":{"cpu":"1"}}}],"containers":[
			{"name":"app","image":"x","ports":[{"containerPort":80}],"resources":{"requests":{"cpu":"100m","memory":"100Mi"},"limits":{"cpu":"0.5"}}},
			{"name":"b","resources":{}}]},"status":{}}`,
		"nulls":          `{"metadata":{"name":null,"labels":null,"annotations":null,"ownerReferences":null},"spec":{"containers":[{"name":"a","resources":{"requests":null,"limits":{"cpu":null}}},null]}}`,
		"null pod":       `null`,
		"empty maps":     `{"metadata":{"labels":{},"annotations":{}},"spec":{"containers":[{"name":"a","resources":{"requests":{},"limits":{}}}]}}`,
		"escapes":        `{"metadata":{"labels":{"a\"b":"c\\d\u00e9\ud83d\ude00","\u0041":"\ud800"}},"spec":{"containers":[{"name":"a\/b","resources":{"requests":{"example.com\/foo":"1"}}}]}}`,
		"bare numbers":   `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":2,"memory":1e3},"limits":{"cpu":" 1 "}}}]}}`,
		"claims":         `{"spec":{"containers":[{"name":"a","resources":{"claims":[{"name":"gpu","request":"r"}]}}]}}`,
		"whitespace":     " {\n \"metadata\" : { \"name\" : \"x\" } ,\t\"spec\":{ \"containers\" : [ ] } } ",
		"controller off": `{"metadata":{"ownerReferences":[{"kind":"Foo","name":"f","controller":false},{"kind":"Bar","name":"b"}]}}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			var want corev1.Pod
			if err := json.Unmarshal([]byte(in), &want); err != nil {
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
			if w := handledFields(&want); !equalPods(handledFields(got), w) {
				gj, _ := json.Marshal(handledFields(got))
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
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			var d decoder
			if _, err := d.decode([]byte(in)); err == nil {
				t.Errorf("no error for %s", in)
			}
		})
	}
}

// FuzzDecoder checks that the decoder never panics and, where encoding/json
// decodes a pod, agrees with it on the fields the handler reads.
func FuzzDecoder(f *testing.F) {
	f.Add(`{"metadata":{"name":"a","labels":{"a":"b"},"ownerReferences":[{"kind":"ReplicaSet","name":"r","controller":true}]},"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]}}`)
	f.Add(`{"metadata":{"labels":{"a\u00e9":"\ud800x"}}}`)
	var d decoder
	f.Fuzz(func(t *testing.T, in string) {
		// Input taken as valid without checking must not panic either.
		_, _ = d.decodeChecked([]byte(in), true)
		got, err := d.decode([]byte(in))
		var want corev1.Pod
		werr := json.Unmarshal([]byte(in), &want)
		if err != nil || werr != nil {
			return
		}
		if w := handledFields(&want); !equalPods(handledFields(got), w) {
			t.Errorf("decoder disagrees with encoding/json on %s", in)
		}
	})
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
