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

// Package review decodes the envelope of an AdmissionReview (v1 or v1beta1)
// and encodes the common responses, without reflection. The object itself is
// left as raw JSON for the handler of its kind.
package review

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/openvpa/openvpa/admission-controller/internal/jsonread"
)

// Request is the part of an AdmissionReview the admission controller reads.
// Its byte slices point into the decoded body.
type Request struct {
	// APIVersion and Kind of the review.
	APIVersion, Kind []byte
	// HasRequest is false when the review has no (or a null) request.
	HasRequest bool
	UID        []byte
	// Resource is the group, version and resource of the object.
	Group, Version, Resource []byte
	Namespace                []byte
	Operation                []byte
	// Object and OldObject are the raw JSON of the objects, nil when absent
	// or null.
	Object, OldObject []byte
}

// ErrFallback is returned by Decode for bodies it does not handle (invalid
// JSON, fields of an unexpected type, keys that only differ in case from
// known ones): decode those with encoding/json into an
// admissionv1.AdmissionReview instead, which also gives the error message.
var ErrFallback = errors.New("decode with encoding/json")

// Decoder decodes review envelopes; it keeps scratch space between calls and
// serves one body at a time.
type Decoder struct {
	r jsonread.Reader
}

// Scratch is the capacity of the scratch space the decoder keeps.
func (d *Decoder) Scratch() int { return d.r.ScratchCap() }

var envelopeKeys = [][]byte{[]byte("apiVersion"), []byte("kind"), []byte("request"), []byte("response")}

var requestKeys = [][]byte{
	[]byte("uid"), []byte("kind"), []byte("resource"), []byte("subResource"), []byte("requestKind"), []byte("requestResource"),
	[]byte("requestSubResource"), []byte("name"), []byte("namespace"), []byte("operation"), []byte("userInfo"),
	[]byte("object"), []byte("oldObject"), []byte("dryRun"), []byte("options"),
}

var resourceKeys = [][]byte{[]byte("group"), []byte("version"), []byte("resource")}

// foldsToKnown reports whether key matches one of known only when case is
// ignored, as encoding/json would match it.
func foldsToKnown(key []byte, known [][]byte) bool {
	for _, k := range known {
		if bytes.EqualFold(key, k) && !bytes.Equal(key, k) {
			return true
		}
	}
	return false
}

// Decode fills req from body. It returns ErrFallback when encoding/json
// should decide instead.
func (d *Decoder) Decode(body []byte, req *Request) error {
	*req = Request{}
	if !json.Valid(body) {
		return ErrFallback
	}
	d.r.Reset(body)
	if d.r.Peek() != jsonread.Object {
		return ErrFallback
	}
	return d.r.Object("", func(key []byte) error {
		switch string(key) {
		case "apiVersion":
			return d.rawString(&req.APIVersion)
		case "kind":
			return d.rawString(&req.Kind)
		case "request":
			return d.request(req)
		}
		if foldsToKnown(key, envelopeKeys) {
			return ErrFallback
		}
		return d.r.Skip()
	})
}

// rawString reads a plain ASCII string value without escapes (anything else
// falls back)
// and stores its bytes, which point into the body.
func (d *Decoder) rawString(dst *[]byte) error {
	switch d.r.Peek() {
	case jsonread.Null:
		d.r.Literal()
		return nil
	case jsonread.String:
		raw, err := d.r.Raw()
		if err != nil {
			return err
		}
		s := raw[1 : len(raw)-1]
		for _, c := range s {
			if c == '\\' || c >= 0x80 {
				return ErrFallback
			}
		}
		*dst = s
		return nil
	}
	return ErrFallback
}

func (d *Decoder) object(dst *[]byte) error {
	switch d.r.Peek() {
	case jsonread.Null:
		d.r.Literal()
		*dst = nil
		return nil
	case jsonread.Object:
		raw, err := d.r.Raw()
		*dst = raw
		return err
	}
	return ErrFallback
}

func (d *Decoder) request(req *Request) error {
	switch d.r.Peek() {
	case jsonread.Null:
		d.r.Literal()
		req.HasRequest = false
		return nil
	case jsonread.Object:
	default:
		return ErrFallback
	}
	req.HasRequest = true
	return d.r.Object("", func(key []byte) error {
		switch string(key) {
		case "uid":
			return d.rawString(&req.UID)
		case "resource":
			if d.r.Peek() == jsonread.Null {
				d.r.Literal()
				return nil
			}
			if d.r.Peek() != jsonread.Object {
				return ErrFallback
			}
			return d.r.Object("", func(key []byte) error {
				switch string(key) {
				case "group":
					return d.rawString(&req.Group)
				case "version":
					return d.rawString(&req.Version)
				case "resource":
					return d.rawString(&req.Resource)
				}
				if foldsToKnown(key, resourceKeys) {
					return ErrFallback
				}
				return d.r.Skip()
			})
		case "namespace":
			return d.rawString(&req.Namespace)
		case "operation":
			return d.rawString(&req.Operation)
		case "object":
			return d.object(&req.Object)
		case "oldObject":
			return d.object(&req.OldObject)
		}
		if foldsToKnown(key, requestKeys) {
			return ErrFallback
		}
		// Fields the admission controller does not read are not
		// type-checked here; encoding/json would refuse some of them.
		return d.r.Skip()
	})
}

// FromAdmissionReview fills req from a review decoded by encoding/json.
func FromAdmissionReview(r *admissionv1.AdmissionReview, req *Request) {
	*req = Request{APIVersion: []byte(r.APIVersion), Kind: []byte(r.Kind)}
	if r.Request == nil {
		return
	}
	q := r.Request
	req.HasRequest = true
	req.UID = []byte(q.UID)
	req.Group, req.Version, req.Resource = []byte(q.Resource.Group), []byte(q.Resource.Version), []byte(q.Resource.Resource)
	req.Namespace = []byte(q.Namespace)
	req.Operation = []byte(q.Operation)
	if len(q.Object.Raw) > 0 && string(q.Object.Raw) != "null" {
		req.Object = q.Object.Raw
	}
	if len(q.OldObject.Raw) > 0 && string(q.OldObject.Raw) != "null" {
		req.OldObject = q.OldObject.Raw
	}
}

// AppendAllowed appends the AdmissionReview (of apiVersion) that allows the
// request uid, with the JSON patch when patch is not empty: the bytes
// encoding/json gives for the same admissionv1.AdmissionReview.
func AppendAllowed(dst []byte, apiVersion, uid, patch []byte) []byte {
	dst = append(dst, `{"kind":"AdmissionReview","apiVersion":`...)
	dst = jsonread.AppendString(dst, apiVersion)
	dst = append(dst, `,"response":{"uid":`...)
	dst = jsonread.AppendString(dst, uid)
	dst = append(dst, `,"allowed":true`...)
	if len(patch) > 0 {
		dst = append(dst, `,"patch":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, patch)
		dst = append(dst, `","patchType":"JSONPatch"`...)
	}
	return append(dst, '}', '}')
}
