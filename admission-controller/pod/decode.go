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
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/openvpa/openvpa/admission-controller/internal/jsonread"
)

// decoder fills a Decoded (metadata name, generateName, namespace, labels,
// annotations and ownerReferences; the pod-level resources; each
// container's and init container's name, resources and restartPolicy; the
// nodeSelector, required node affinity and tolerations) from
// the pod JSON of an AdmissionReview, without reflection, reusing its maps
// and slices from one pod to the next. Other fields are skipped. A decoder
// serves one pod at a time. TestDecodedFields holds it to filling exactly
// the fields of Decoded.
//
// It decodes what the API server's decoder (sigs.k8s.io/json, case-sensitive)
// decodes: keys match exactly, quantities are parsed from their raw JSON text
// as resource.Quantity's UnmarshalJSON parses them (escapes are not
// unescaped). A key of a decoded object given twice, which the API server
// never sends, makes the pod decoded again by sigs.k8s.io/json itself, whose
// merging of repeated objects and arrays is not worth copying.
type decoder struct {
	r   jsonread.Reader
	pod Decoded
	// spare holds cleared maps from earlier pods, for reuse.
	spareLists []corev1.ResourceList
	spareMaps  []map[string]string
	containers []Container
	inits      []Container
	podLevel   corev1.ResourceRequirements
	// restart holds the containers' restartPolicy values.
	restart    []corev1.ContainerRestartPolicy
	owners     []Owner
	controller []bool
	// tolerations and seconds hold the pod's tolerations and their
	// tolerationSeconds values.
	tolerations []corev1.Toleration
	seconds     []int64
	// quantities caches parsed quantities by their text.
	quantities map[string]resource.Quantity
	// duplicate is set when a decoded object repeats a known key.
	duplicate bool
}

// MaxContainers is the most containers a pod may have to be patched: more
// than fit in the largest object the API server can store (etcd's default
// request limit of 1.5 MiB, with at least 128 bytes for the smallest
// container as the API server sends it, defaults included).
const MaxContainers = (3 << 19) / 128

// TooManyContainersError is returned for a pod with more than MaxContainers
// containers; the pod is admitted unchanged.
type TooManyContainersError struct{ Max int }

func (e *TooManyContainersError) Error() string {
	return fmt.Sprintf("the pod has more than %d containers, more than the API server can store", e.Max)
}

// reset returns the maps of the last pod to the spares.
func (d *decoder) reset() {
	p := &d.pod
	for _, m := range []map[string]string{p.Labels, p.Annotations, p.NodeSelector} {
		if m != nil {
			clear(m)
			d.spareMaps = append(d.spareMaps, m)
		}
	}
	spare := func(res *corev1.ResourceRequirements) {
		for _, l := range []corev1.ResourceList{res.Requests, res.Limits} {
			if l != nil {
				clear(l)
				d.spareLists = append(d.spareLists, l)
			}
		}
	}
	for i := range p.Containers {
		spare(&p.Containers[i].Resources)
	}
	for i := range p.InitContainers {
		spare(&p.InitContainers[i].Resources)
	}
	if p.Resources != nil {
		spare(p.Resources)
	}
	clear(d.containers)
	clear(d.inits)
	d.podLevel = corev1.ResourceRequirements{}
	d.restart = d.restart[:0]
	clear(d.owners)
	clear(d.tolerations)
	d.tolerations = d.tolerations[:0]
	d.seconds = d.seconds[:0]
	d.pod = Decoded{}
	d.duplicate = false
}

func (d *decoder) stringMap() map[string]string {
	if n := len(d.spareMaps); n > 0 {
		m := d.spareMaps[n-1]
		d.spareMaps = d.spareMaps[:n-1]
		return m
	}
	return map[string]string{}
}

func (d *decoder) resourceList() corev1.ResourceList {
	if n := len(d.spareLists); n > 0 {
		m := d.spareLists[n-1]
		d.spareLists = d.spareLists[:n-1]
		return m
	}
	return corev1.ResourceList{}
}

// decode parses raw into d.pod, valid until the next call. Invalid JSON and
// fields of the wrong type are errors, with encoding/json's message for the
// former.
func (d *decoder) decode(raw []byte) (*Decoded, error) {
	return d.decodeChecked(raw, false)
}

// decodeChecked is decode; with valid set, raw is known to be valid JSON
// (it was checked with the review around it) and is not checked again.
// Invalid JSON passed as valid still cannot make the decoder panic or read
// out of bounds, but may decode to a pod.
func (d *decoder) decodeChecked(raw []byte, valid bool) (*Decoded, error) {
	d.reset()
	if !valid && !json.Valid(raw) {
		var p struct{}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("invalid JSON")
	}
	d.r.Reset(raw)
	if d.null() {
		return &d.pod, nil
	}
	var seen keySet
	err := d.r.Object("pod", func(key []byte) error {
		switch d.field(key, podKeys, &seen) {
		case "metadata":
			return d.metadata()
		case "spec":
			return d.spec()
		}
		return d.r.Skip()
	})
	if err != nil {
		return nil, err
	}
	if d.duplicate {
		// Every containers array was counted on the way.
		return d.decodeRepeated(raw)
	}
	return &d.pod, nil
}

// repeatedPod is the part of a corev1.Pod that Decoded holds, with the
// containers and owner references of corev1.Pod's own types, so that
// sigs.k8s.io/json merges repeated arrays into them exactly as it does for a
// corev1.Pod.
type repeatedPod struct {
	Metadata struct {
		Name            string                  `json:"name"`
		GenerateName    string                  `json:"generateName"`
		Namespace       string                  `json:"namespace"`
		Labels          map[string]string       `json:"labels"`
		Annotations     map[string]string       `json:"annotations"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		Containers     []corev1.Container           `json:"containers"`
		InitContainers []corev1.Container           `json:"initContainers"`
		Resources      *corev1.ResourceRequirements `json:"resources"`
		NodeSelector   map[string]string            `json:"nodeSelector"`
		Affinity       *nodeAffinityOnly            `json:"affinity"`
		Tolerations    []corev1.Toleration          `json:"tolerations"`
	} `json:"spec"`
}

// decodeRepeated decodes a pod that repeats keys with the API server's
// decoder.
func (d *decoder) decodeRepeated(raw []byte) (*Decoded, error) {
	d.reset()
	var p repeatedPod
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &p); err != nil {
		return nil, err
	}
	m := &p.Metadata
	d.pod = Decoded{Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations,
		Containers: decodedContainers(p.Spec.Containers), InitContainers: decodedContainers(p.Spec.InitContainers), Resources: p.Spec.Resources,
		NodeSelector: p.Spec.NodeSelector, RequiredNodeAffinity: p.Spec.Affinity.required(), Tolerations: p.Spec.Tolerations}
	if m.OwnerReferences != nil {
		d.pod.OwnerReferences = make([]Owner, len(m.OwnerReferences))
		for i, o := range m.OwnerReferences {
			d.pod.OwnerReferences[i] = Owner{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Controller: o.Controller}
		}
	}
	return &d.pod, nil
}

// nodeAffinityOnly is the part of a pod's affinity that Decoded holds.
type nodeAffinityOnly struct {
	NodeAffinity *struct {
		Required *corev1.NodeSelector `json:"requiredDuringSchedulingIgnoredDuringExecution"`
	} `json:"nodeAffinity"`
}

func (a *nodeAffinityOnly) required() *corev1.NodeSelector {
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	return a.NodeAffinity.Required
}

// decodedContainers keeps the decoded fields of cs.
func decodedContainers(cs []corev1.Container) []Container {
	if cs == nil {
		return nil
	}
	out := make([]Container, len(cs))
	for i := range cs {
		c := &cs[i]
		out[i] = Container{Name: c.Name, RestartPolicy: c.RestartPolicy, Resources: corev1.ResourceRequirements{
			Requests: c.Resources.Requests, Limits: c.Resources.Limits, Claims: c.Resources.Claims}}
	}
	return out
}

// keySet records which known keys of one object were seen.
type keySet uint8

// Known keys per object (at most 8 each, for keySet).
var (
	podKeys        = []string{"metadata", "spec"}
	metadataKeys   = []string{"name", "generateName", "namespace", "labels", "annotations", "ownerReferences"}
	ownerKeys      = []string{"apiVersion", "kind", "name", "controller"}
	specKeys       = []string{"containers", "initContainers", "resources", "nodeSelector", "affinity", "tolerations"}
	tolerationKeys = []string{"key", "operator", "value", "effect", "tolerationSeconds"}
	containerKeys  = []string{"name", "resources", "restartPolicy"}
	resourcesKeys  = []string{"requests", "limits", "claims"}
	claimKeys      = []string{"name", "request"}
)

// field returns the known key that key is, "" when none, and records it in
// seen, noting a repeated key in d.duplicate. Keys match exactly, as the API
// server's decoder matches them.
func (d *decoder) field(key []byte, known []string, seen *keySet) string {
	for i, k := range known {
		if string(key) == k {
			bit := keySet(1) << i
			if *seen&bit != 0 {
				d.duplicate = true
			}
			*seen |= bit
			return k
		}
	}
	return ""
}

// null consumes a null if one comes next.
func (d *decoder) null() bool {
	if d.r.Peek() == jsonread.Null {
		d.r.Literal()
		return true
	}
	return false
}

func (d *decoder) str(field string, dst *string) error {
	s, ok, err := d.r.StringOrNull(field)
	if ok {
		*dst = string(s)
	}
	return err
}

func (d *decoder) metadata() error {
	if d.null() {
		return nil
	}
	m := &d.pod
	var seen keySet
	return d.r.Object("metadata", func(key []byte) error {
		switch d.field(key, metadataKeys, &seen) {
		case "name":
			return d.str("metadata.name", &m.Name)
		case "generateName":
			return d.str("metadata.generateName", &m.GenerateName)
		case "namespace":
			return d.str("metadata.namespace", &m.Namespace)
		case "labels":
			return d.labels("metadata.labels", &m.Labels)
		case "annotations":
			return d.labels("metadata.annotations", &m.Annotations)
		case "ownerReferences":
			return d.ownerReferences()
		}
		return d.r.Skip()
	})
}

func (d *decoder) labels(field string, dst *map[string]string) error {
	if d.null() {
		return nil
	}
	if err := d.r.Expect(field, jsonread.Object); err != nil {
		return err
	}
	if *dst == nil {
		*dst = d.stringMap()
	}
	m := *dst
	return d.r.Object(field, func(key []byte) error {
		k := string(key)
		s, ok, err := d.r.StringOrNull(field)
		if err != nil {
			return err
		}
		if ok {
			m[k] = string(s)
		} else {
			m[k] = ""
		}
		return nil
	})
}

func (d *decoder) ownerReferences() error {
	if d.null() {
		return nil
	}
	d.owners = d.owners[:0]
	d.controller = d.controller[:0]
	err := d.r.Array("metadata.ownerReferences", func(int) error {
		d.owners = append(d.owners, Owner{})
		o := &d.owners[len(d.owners)-1]
		if d.null() {
			return nil
		}
		var seen keySet
		return d.r.Object("metadata.ownerReferences", func(key []byte) error {
			switch d.field(key, ownerKeys, &seen) {
			case "apiVersion":
				return d.internedStr("ownerReferences.apiVersion", &o.APIVersion)
			case "kind":
				return d.internedStr("ownerReferences.kind", &o.Kind)
			case "name":
				return d.str("ownerReferences.name", &o.Name)
			case "controller":
				v, isNull, err := d.r.Bool("ownerReferences.controller")
				if err == nil && !isNull {
					d.controller = append(d.controller, v)
					o.Controller = &d.controller[len(d.controller)-1]
				}
				return err
			}
			return d.r.Skip()
		})
	})
	if err != nil {
		return err
	}
	d.pod.OwnerReferences = d.owners
	return nil
}

// interned are owner kinds and API versions common enough to be shared
// rather than allocated for every pod.
var interned = map[string]string{}

func init() {
	for _, s := range []string{"v1", "apps/v1", "batch/v1", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController", "Node",
		// The tolerations the API server gives every pod.
		"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "Exists", "Equal", "NoExecute", "NoSchedule", "PreferNoSchedule"} {
		interned[s] = s
	}
}

func (d *decoder) internedStr(field string, dst *string) error {
	s, ok, err := d.r.StringOrNull(field)
	if ok {
		if v, found := interned[string(s)]; found {
			*dst = v
		} else {
			*dst = string(s)
		}
	}
	return err
}

func (d *decoder) spec() error {
	if d.null() {
		return nil
	}
	var seen keySet
	return d.r.Object("spec", func(key []byte) error {
		switch d.field(key, specKeys, &seen) {
		case "containers":
			return d.containerList(&containerFields, &d.containers, &d.pod.Containers)
		case "initContainers":
			return d.containerList(&initContainerFields, &d.inits, &d.pod.InitContainers)
		case "resources":
			if d.null() {
				return nil
			}
			d.pod.Resources = &d.podLevel
			return d.requirements(&podResourceFields, &d.podLevel)
		case "nodeSelector":
			return d.labels("spec.nodeSelector", &d.pod.NodeSelector)
		case "affinity":
			return d.affinity()
		case "tolerations":
			return d.tolerationList()
		}
		return d.r.Skip()
	})
}

// affinity decodes the required node affinity of spec.affinity, which few
// pods set, with the API server's decoder.
func (d *decoder) affinity() error {
	if d.null() {
		d.pod.RequiredNodeAffinity = nil
		return nil
	}
	if err := d.r.Expect("spec.affinity", jsonread.Object); err != nil {
		return err
	}
	raw, err := d.r.Raw()
	if err != nil {
		return err
	}
	var a nodeAffinityOnly
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &a); err != nil {
		return fmt.Errorf("spec.affinity: %w", err)
	}
	d.pod.RequiredNodeAffinity = a.required()
	return nil
}

// tolerationList decodes spec.tolerations.
func (d *decoder) tolerationList() error {
	if d.null() {
		d.pod.Tolerations = nil
		return nil
	}
	clear(d.tolerations)
	d.tolerations = d.tolerations[:0]
	err := d.r.Array("spec.tolerations", func(int) error {
		d.tolerations = append(d.tolerations, corev1.Toleration{})
		t := &d.tolerations[len(d.tolerations)-1]
		if d.null() {
			return nil
		}
		var seen keySet
		return d.r.Object("spec.tolerations", func(key []byte) error {
			var s string
			var err error
			switch d.field(key, tolerationKeys, &seen) {
			case "key":
				err = d.internedStr("spec.tolerations.key", &t.Key)
			case "operator":
				err = d.internedStr("spec.tolerations.operator", &s)
				t.Operator = corev1.TolerationOperator(s)
			case "value":
				err = d.str("spec.tolerations.value", &t.Value)
			case "effect":
				err = d.internedStr("spec.tolerations.effect", &s)
				t.Effect = corev1.TaintEffect(s)
			case "tolerationSeconds":
				if d.null() {
					t.TolerationSeconds = nil
					return nil
				}
				if err := d.r.Expect("spec.tolerations.tolerationSeconds", jsonread.Number); err != nil {
					return err
				}
				v, err := strconv.ParseInt(string(d.r.Literal()), 10, 64)
				if err != nil {
					return fmt.Errorf("spec.tolerations.tolerationSeconds: %w", err)
				}
				d.seconds = append(d.seconds, v)
				t.TolerationSeconds = &d.seconds[len(d.seconds)-1]
			default:
				return d.r.Skip()
			}
			return err
		})
	})
	d.pod.Tolerations = d.tolerations
	return err
}

// resourceFields name the fields of a ResourceRequirements in errors.
type resourceFields struct{ self, requests, limits, claims string }

// listFields name the fields of a list of containers in errors.
type listFields struct {
	list, name, restartPolicy string
	resources                 resourceFields
}

var (
	containerFields = listFields{list: "spec.containers", name: "spec.containers.name", restartPolicy: "spec.containers.restartPolicy",
		resources: resourceFields{"spec.containers.resources", "spec.containers.resources.requests", "spec.containers.resources.limits", "spec.containers.resources.claims"}}
	initContainerFields = listFields{list: "spec.initContainers", name: "spec.initContainers.name", restartPolicy: "spec.initContainers.restartPolicy",
		resources: resourceFields{"spec.initContainers.resources", "spec.initContainers.resources.requests", "spec.initContainers.resources.limits", "spec.initContainers.resources.claims"}}
	podResourceFields = resourceFields{"spec.resources", "spec.resources.requests", "spec.resources.limits", "spec.resources.claims"}
)

// containerList decodes an array of containers into buf (reused from pod
// to pod) and sets dst to it. Containers and init containers together are
// at most MaxContainers.
func (d *decoder) containerList(f *listFields, buf, dst *[]Container) error {
	if d.null() {
		*dst = nil
		return nil
	}
	if *buf == nil {
		*buf = make([]Container, 0, 4)
	}
	*buf = (*buf)[:0]
	others := len(d.pod.Containers) + len(d.pod.InitContainers) - len(*dst)
	err := d.r.Array(f.list, func(i int) error {
		if others+i >= MaxContainers {
			return &TooManyContainersError{Max: MaxContainers}
		}
		*buf = append(*buf, Container{})
		return d.container(f, &(*buf)[len(*buf)-1])
	})
	*dst = *buf
	return err
}

func (d *decoder) container(f *listFields, c *Container) error {
	if d.null() {
		return nil
	}
	var seen keySet
	return d.r.Object(f.list, func(key []byte) error {
		switch d.field(key, containerKeys, &seen) {
		case "name":
			return d.str(f.name, &c.Name)
		case "resources":
			if d.null() {
				return nil
			}
			return d.requirements(&f.resources, &c.Resources)
		case "restartPolicy":
			s, ok, err := d.r.StringOrNull(f.restartPolicy)
			if ok {
				d.restart = append(d.restart, corev1.ContainerRestartPolicy(s))
				c.RestartPolicy = &d.restart[len(d.restart)-1]
			}
			return err
		}
		return d.r.Skip()
	})
}

// requirements decodes a container's or the pod's resources.
func (d *decoder) requirements(f *resourceFields, r *corev1.ResourceRequirements) error {
	var seen keySet
	return d.r.Object(f.self, func(key []byte) error {
		switch d.field(key, resourcesKeys, &seen) {
		case "requests":
			return d.resources(f.requests, &r.Requests)
		case "limits":
			return d.resources(f.limits, &r.Limits)
		case "claims":
			return d.claims(f.claims, r)
		}
		return d.r.Skip()
	})
}

func (d *decoder) claims(field string, r *corev1.ResourceRequirements) error {
	if d.null() {
		return nil
	}
	r.Claims = nil
	return d.r.Array(field, func(int) error {
		r.Claims = append(r.Claims, corev1.ResourceClaim{})
		cl := &r.Claims[len(r.Claims)-1]
		if d.null() {
			return nil
		}
		var seen keySet
		return d.r.Object(field, func(key []byte) error {
			switch d.field(key, claimKeys, &seen) {
			case "name":
				return d.str(field, &cl.Name)
			case "request":
				return d.str(field, &cl.Request)
			}
			return d.r.Skip()
		})
	})
}

func resourceName(b []byte) corev1.ResourceName {
	switch string(b) {
	case "cpu":
		return corev1.ResourceCPU
	case "memory":
		return corev1.ResourceMemory
	case "ephemeral-storage":
		return corev1.ResourceEphemeralStorage
	}
	return corev1.ResourceName(b)
}

// resources reads a ResourceList the way resource.Quantity's UnmarshalJSON
// does: quoted (the text between the quotes, escapes left as they are) or
// bare, surrounding spaces trimmed, null as zero.
func (d *decoder) resources(field string, dst *corev1.ResourceList) error {
	if d.null() {
		return nil
	}
	if err := d.r.Expect(field, jsonread.Object); err != nil {
		return err
	}
	if *dst == nil {
		*dst = d.resourceList()
	}
	l := *dst
	return d.r.Object(field, func(key []byte) error {
		name := resourceName(key)
		var value []byte
		switch d.r.Peek() {
		case jsonread.Null:
			d.r.Literal()
			l[name] = resource.Quantity{}
			return nil
		case jsonread.String:
			raw, err := d.r.Raw()
			if err != nil {
				return err
			}
			value = raw[1 : len(raw)-1]
		case jsonread.Object, jsonread.Array:
			raw, err := d.r.Raw()
			if err != nil {
				return err
			}
			value = raw
		default:
			value = d.r.Literal()
		}
		q, err := d.quantity(bytes.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%s.%s: %w", field, name, err)
		}
		l[name] = q
		return nil
	})
}

// maxPooled bounds the slices and maps a decoder keeps for the next pod, so
// that a pool of decoders gives memory back after a burst of large pods.
const maxPooled = 64

// small reports whether d holds little enough memory to be kept for reuse.
func (d *decoder) small() bool {
	return cap(d.containers) <= maxPooled && cap(d.inits) <= maxPooled && cap(d.restart) <= maxPooled &&
		cap(d.tolerations) <= maxPooled && cap(d.seconds) <= maxPooled && len(d.pod.NodeSelector) <= maxPooled &&
		cap(d.owners) <= maxPooled && cap(d.controller) <= maxPooled &&
		len(d.spareLists)+2*(len(d.pod.Containers)+len(d.pod.InitContainers)+1) <= 4*maxPooled && len(d.spareMaps) <= maxPooled &&
		len(d.pod.Labels) <= maxPooled && len(d.pod.Annotations) <= maxPooled && d.r.ScratchCap() <= 64<<10
}

// maxQuantities bounds the quantity cache of a decoder, maxCachedQuantity
// the length of a quantity's text for it to be cached.
const (
	maxQuantities     = 1024
	maxCachedQuantity = 32
)

// quantity parses a quantity, remembering the result: the same few values
// recur in pod after pod. Cached quantities have their string form computed
// (String caches it), so writing them into patches does not allocate.
func (d *decoder) quantity(s []byte) (resource.Quantity, error) {
	if q, ok := d.quantities[string(s)]; ok {
		return q.DeepCopy(), nil
	}
	q, err := resource.ParseQuantity(string(s))
	if err != nil {
		return q, err
	}
	_ = q.String()
	if len(s) > maxCachedQuantity {
		return q, nil
	}
	if d.quantities == nil || len(d.quantities) >= maxQuantities {
		d.quantities = make(map[string]resource.Quantity, 64)
	}
	d.quantities[string(s)] = q
	return q.DeepCopy(), nil
}
