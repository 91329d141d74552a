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

package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const podReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"Pod"},
"resource":{"group":"","version":"v1","resource":"pods"},"requestKind":{"group":"","version":"v1","kind":"Pod"},"namespace":"ns","operation":"CREATE",
"userInfo":{"username":"system:serviceaccount:kube-system:replicaset-controller","groups":["a","b"]},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"vpa":"yes"}},"spec":{"containers":[{"name":"a"}]}},"oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions"}}}`

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	tests := map[string]struct {
		body         string
		wantFallback bool
	}{
		"pod review":         {body: podReview},
		"no request":         {body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`},
		"null request":       {body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`},
		"update":             {body: `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x","resource":{"group":"autoscaling.k8s.io","version":"v1","resource":"verticalpodautoscalers"},"operation":"UPDATE","object":{"a":1},"oldObject":{"b":2}}}`},
		"escaped uid":        {body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a\"b"}}`, wantFallback: true},
		"key in other case":  {body: `{"APIVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}`, wantFallback: true},
		"uid not a string":   {body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":5}}`, wantFallback: true},
		"invalid JSON":       {body: `{"apiVersion":`, wantFallback: true},
		"not an object":      {body: `[]`, wantFallback: true},
		"object is a number": {body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":7}}`, wantFallback: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var d Decoder
			var got Request
			err := d.Decode([]byte(tc.body), &got)
			if tc.wantFallback {
				if !errors.Is(err, ErrFallback) {
					t.Fatalf("err = %v, want ErrFallback", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var full admissionv1.AdmissionReview
			if err := json.Unmarshal([]byte(tc.body), &full); err != nil {
				t.Fatal(err)
			}
			var want Request
			FromAdmissionReview(&full, &want)
			if !equalRequests(&got, &want) {
				t.Errorf("decoded %+v\nwant %+v", got, want)
			}
		})
	}
}

func equalRequests(a, b *Request) bool {
	eq := func(x, y []byte) bool { return bytes.Equal(x, y) }
	return eq(a.APIVersion, b.APIVersion) && eq(a.Kind, b.Kind) && a.HasRequest == b.HasRequest && eq(a.UID, b.UID) &&
		eq(a.Group, b.Group) && eq(a.Version, b.Version) && eq(a.Resource, b.Resource) && eq(a.Namespace, b.Namespace) &&
		eq(a.Operation, b.Operation) && eq(a.Object, b.Object) && eq(a.OldObject, b.OldObject)
}

func TestAppendAllowedMatchesEncodingJSON(t *testing.T) {
	pt := admissionv1.PatchTypeJSONPatch
	tests := map[string]struct {
		apiVersion, uid string
		patch           []byte
	}{
		"with patch":       {apiVersion: "admission.k8s.io/v1", uid: "u-1", patch: []byte(`[{"op":"add","path":"/a","value":"<&>"}]`)},
		"without patch":    {apiVersion: "admission.k8s.io/v1beta1", uid: "u-2"},
		"uid needs escape": {apiVersion: "admission.k8s.io/v1", uid: "a\"<b>\u2028"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp := &admissionv1.AdmissionResponse{UID: types.UID(tc.uid), Allowed: true}
			if len(tc.patch) > 0 {
				resp.Patch, resp.PatchType = tc.patch, &pt
			}
			want, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: tc.apiVersion, Kind: "AdmissionReview"}, Response: resp})
			if err != nil {
				t.Fatal(err)
			}
			got := AppendAllowed(nil, []byte(tc.apiVersion), []byte(tc.uid), tc.patch)
			if !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
