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
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// decodedFields lists the fields Decoded carries, each with the pod field
// it is (JSON path, "[]" for the elements of a list). A field added to the
// decoder, to Decoded or to Decoded.Pod must be added here, and
// TestDecodedFields checks that all four agree.
var decodedFields = []struct{ decoded, pod string }{
	{"Name", "metadata.name"},
	{"GenerateName", "metadata.generateName"},
	{"Namespace", "metadata.namespace"},
	{"Labels", "metadata.labels"},
	{"Annotations", "metadata.annotations"},
	{"OwnerReferences[].APIVersion", "metadata.ownerReferences[].apiVersion"},
	{"OwnerReferences[].Kind", "metadata.ownerReferences[].kind"},
	{"OwnerReferences[].Name", "metadata.ownerReferences[].name"},
	{"OwnerReferences[].Controller", "metadata.ownerReferences[].controller"},
	{"Containers[].Name", "spec.containers[].name"},
	{"Containers[].Resources.Requests", "spec.containers[].resources.requests"},
	{"Containers[].Resources.Limits", "spec.containers[].resources.limits"},
	{"Containers[].Resources.Claims[].Name", "spec.containers[].resources.claims[].name"},
	{"Containers[].Resources.Claims[].Request", "spec.containers[].resources.claims[].request"},
	{"Containers[].RestartPolicy", "spec.containers[].restartPolicy"},
	{"InitContainers[].Name", "spec.initContainers[].name"},
	{"InitContainers[].Resources.Requests", "spec.initContainers[].resources.requests"},
	{"InitContainers[].Resources.Limits", "spec.initContainers[].resources.limits"},
	{"InitContainers[].Resources.Claims[].Name", "spec.initContainers[].resources.claims[].name"},
	{"InitContainers[].Resources.Claims[].Request", "spec.initContainers[].resources.claims[].request"},
	{"InitContainers[].RestartPolicy", "spec.initContainers[].restartPolicy"},
	{"Resources.Requests", "spec.resources.requests"},
	{"Resources.Limits", "spec.resources.limits"},
	{"Resources.Claims[].Name", "spec.resources.claims[].name"},
	{"Resources.Claims[].Request", "spec.resources.claims[].request"},
	{"NodeSelector", "spec.nodeSelector"},
	{"RequiredNodeAffinity.NodeSelectorTerms[].MatchExpressions[].Key", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchExpressions[].key"},
	{"RequiredNodeAffinity.NodeSelectorTerms[].MatchExpressions[].Operator", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchExpressions[].operator"},
	{"RequiredNodeAffinity.NodeSelectorTerms[].MatchExpressions[].Values[]", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchExpressions[].values[]"},
	{"RequiredNodeAffinity.NodeSelectorTerms[].MatchFields[].Key", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchFields[].key"},
	{"RequiredNodeAffinity.NodeSelectorTerms[].MatchFields[].Operator", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchFields[].operator"},
	{"RequiredNodeAffinity.NodeSelectorTerms[].MatchFields[].Values[]", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchFields[].values[]"},
	{"Tolerations[].Key", "spec.tolerations[].key"},
	{"Tolerations[].Operator", "spec.tolerations[].operator"},
	{"Tolerations[].Value", "spec.tolerations[].value"},
	{"Tolerations[].Effect", "spec.tolerations[].effect"},
	{"Tolerations[].TolerationSeconds", "spec.tolerations[].tolerationSeconds"},
}

// TestDecodedFields decodes a pod with every field set and fails unless the
// decoder fills exactly the fields of Decoded, Pod sets exactly the pod
// fields decodedFields pairs them with, and each field holds what the API
// server's decoder decodes: so a field the decoder fills that Decoded or
// the pod from Pod does not carry, or one Decoded carries that the decoder
// does not fill, is caught here rather than read as a zero value. Both of
// the decoder's ways are checked: its own, and sigs.k8s.io/json's for pods
// with repeated keys.
func TestDecodedFields(t *testing.T) {
	var full corev1.Pod
	(&filler{t: t}).fill(reflect.ValueOf(&full).Elem(), "pod")
	raw, err := json.Marshal(&full)
	if err != nil {
		t.Fatal(err)
	}
	var carried Decoded
	(&filler{t: t}).fill(reflect.ValueOf(&carried).Elem(), "Decoded")
	listed := map[string]bool{}
	listedPod := map[string]bool{}
	for _, f := range decodedFields {
		listed[f.decoded] = true
		listedPod[f.pod] = true
	}
	checkPaths(t, "fields of Decoded", leaves(reflect.ValueOf(carried), goName), listed)

	for name, in := range map[string]string{
		"decoder":       string(raw),
		"repeated keys": `{"metadata":{},` + string(raw[1:]),
	} {
		t.Run(name, func(t *testing.T) {
			whole, err := apiServerDecode([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			var d decoder
			decoded, err := d.decode([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			filled := leaves(reflect.ValueOf(*decoded), goName)
			set := leaves(reflect.ValueOf(*decoded.Pod(&corev1.Pod{})), jsonName)
			fromWhole := leaves(reflect.ValueOf(*whole), jsonName)
			projected := leaves(reflect.ValueOf(*decodedFrom(whole)), goName)
			checkPaths(t, "fields the decoder fills", filled, listed)
			checkPaths(t, "pod fields Decoded.Pod sets", set, listedPod)
			checkPaths(t, "fields the tests' decodedFrom copies", projected, listed)
			for _, f := range decodedFields {
				want := fromWhole[f.pod]
				if want == nil {
					t.Errorf("the pod with every field set has no %s", f.pod)
				}
				for _, got := range []struct {
					what   string
					values []string
				}{
					{"decoded " + f.decoded, filled[f.decoded]},
					{"Pod's " + f.pod, set[f.pod]},
					{"decodedFrom's " + f.decoded, projected[f.decoded]},
				} {
					if got.values != nil && !slices.Equal(got.values, want) {
						t.Errorf("%s = %s, the API server decodes %s", got.what, got.values, want)
					}
				}
			}
		})
	}
}

// checkPaths fails unless paths has exactly the paths of want.
func checkPaths(t *testing.T, what string, paths map[string][]string, want map[string]bool) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if !want[p] {
			t.Errorf("%s: %s, which decodedFields does not list", what, p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if _, ok := paths[p]; !ok {
			t.Errorf("%s: %s is listed in decodedFields but missing", what, p)
		}
	}
}

// goName names a struct field in paths by its Go name.
func goName(f reflect.StructField) (string, bool) { return f.Name, f.Anonymous }

// jsonName names a struct field in paths by its JSON name; an embedded
// struct without one is inline.
func jsonName(f reflect.StructField) (string, bool) {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return "", false
	}
	if name == "" {
		return f.Name, f.Anonymous
	}
	return name, false
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// isLeaf reports whether values of t are leaves of the field tree: not
// structs, or structs with their own JSON form (quantities, times).
func isLeaf(t reflect.Type) bool {
	return t.Kind() != reflect.Struct || t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
}

// leaves returns the set leaves of v (non-zero values, non-nil maps) by
// path, each with the JSON of its values, one per element of the lists on
// the way.
func leaves(v reflect.Value, name func(reflect.StructField) (string, bool)) map[string][]string {
	out := map[string][]string{}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch {
		case v.Kind() == reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), path+"[]")
			}
		case !isLeaf(v.Type()):
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				if !f.IsExported() {
					continue
				}
				n, inline := name(f)
				switch {
				case inline:
					walk(v.Field(i), path)
				case n == "":
				case path == "":
					walk(v.Field(i), n)
				default:
					walk(v.Field(i), path+"."+n)
				}
			}
		case v.Kind() == reflect.Map && !v.IsNil(), v.Kind() != reflect.Map && !v.IsZero():
			b, err := json.Marshal(v.Interface())
			if err != nil {
				panic(err)
			}
			out[path] = append(out[path], string(b))
		}
	}
	walk(v, "")
	return out
}

// filler sets every field of a value, each to its own value where the type
// allows, so that a field read in place of another is seen.
type filler struct {
	t *testing.T
	n int // numbers given so far
}

// fill sets every field under v, at path: strings to their path, numbers
// and quantities to a count, booleans true, one element in every list and
// map, and valid values for the other types with their own JSON form.
func (f *filler) fill(v reflect.Value, path string) {
	t := f.t
	t.Helper()
	if strings.Count(path, ".") > 32 {
		t.Fatalf("%s: too deep, is the type recursive?", path)
	}
	f.n++
	switch v.Interface().(type) {
	case resource.Quantity:
		v.Set(reflect.ValueOf(*resource.NewQuantity(int64(f.n), resource.DecimalSI)))
		return
	case metav1.Time:
		v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(1e9, 0))))
		return
	case metav1.MicroTime:
		v.Set(reflect.ValueOf(metav1.NewMicroTime(time.Unix(1e9, 0))))
		return
	case intstr.IntOrString:
		v.Set(reflect.ValueOf(intstr.FromInt32(1)))
		return
	case metav1.FieldsV1:
		v.Set(reflect.ValueOf(metav1.FieldsV1{Raw: []byte(`{}`)}))
		return
	}
	if v.Kind() == reflect.Struct && isLeaf(v.Type()) {
		t.Fatalf("%s: fill does not know how to set a %s", path, v.Type())
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.n % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.n % 100))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem(), path)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		f.fill(v.Index(0), path+"[]")
	case reflect.Map:
		k := reflect.New(v.Type().Key()).Elem()
		f.fill(k, path+".key")
		e := reflect.New(v.Type().Elem()).Elem()
		f.fill(e, path+".value")
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	default:
		t.Fatalf("%s: fill does not know how to set a %s", path, v.Type())
	}
}
