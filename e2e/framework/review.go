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

package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ReviewPodCreation sends the webhook at url an AdmissionReview of pod's creation, with uid, as
// the API server does, and returns the response: one that echoes uid, or an error.
func ReviewPodCreation(client *http.Client, url, uid string, pod *corev1.Pod) (*admissionv1.AdmissionResponse, error) {
	p := *pod
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	raw, err := json.Marshal(&p)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID(uid), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace, Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		return nil, err
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var rev admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &rev); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", url, resp.Status, err)
	}
	if rev.Response == nil || string(rev.Response.UID) != uid {
		return nil, fmt.Errorf("%s: %s: response %s, want one for uid %s", url, resp.Status, out, uid)
	}
	return rev.Response, nil
}
