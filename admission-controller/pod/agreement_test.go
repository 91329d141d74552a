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
	"context"
	"encoding/json"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

type limitRangesOf struct{ lr limitrange.Merged }

func (l limitRangesOf) LimitRanges(string) (limitrange.Merged, error) { return l.lr, nil }

// agreementRanges are the LimitRanges the agreement checks run under: none,
// and pod and container bounds that the recommendations below can pass.
var agreementRanges = []limitrange.Merged{
	{},
	limitrange.Merge([]*corev1.LimitRange{{
		ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "ns"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypePod, Max: rl("2", "2Gi")},
			{Type: corev1.LimitTypeContainer, Min: rl("50m", "32Mi"), Default: rl("1", "1Gi")},
		}},
	}}),
}

// checkAgreement fails when the handler patches the pod of raw, decoded by
// its own decoder, otherwise than the same pod decoded whole by the API
// server's decoder: the plan (pkg/recommendation) computed from the pod the
// handler builds out of its Decoded must be the plan of the whole pod, so
// every field the recommendation reads must be decoded. (The handler's and
// the VPA finder's own reads are held to the decoded fields by Decoded.)
func checkAgreement(t *testing.T, raw []byte) {
	t.Helper()
	full, err := apiServerDecode(raw)
	if err != nil || len(full.Spec.Containers)+len(full.Spec.InitContainers) > MaxContainers {
		return
	}
	vpa := testVPA(rec("a", rl("1", "600Mi")), rec("b", rl("10m", "10Mi")), rec("i", rl("3", "")))
	for _, lr := range agreementRanges {
		plan := recommendation.PlanForPodShared(full, vpa, lr)
		want, wantApplied, werr := appendPatch(nil, decodedFrom(full), vpa, &plan, nil, layout{}, &scratch{})
		if errors.Is(werr, errPatchTooLarge) {
			want, wantApplied, werr = nil, false, nil
		}
		h := NewHandler(fakeFinder{vpa: vpa}, limitRangesOf{lr})
		got, gerr := h.AdmitJSON(context.Background(), raw, "ns", nil)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got.Patch, want) || got.Applied != wantApplied {
			t.Fatalf("pod %s, LimitRanges %+v:\npatch %s (%v)\nwant  %s (%v)", raw, lr, got.Patch, gerr, want, werr)
		}
	}
}

func TestHandlerDecodesWhatItReads(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := map[string]*corev1.Pod{
		// A request of 1 CPU for a would pass the pod-level 500m: the API
		// server would refuse the patched pod.
		"pod-level resources": func() *corev1.Pod {
			p := testPod(nil, ctr("a", rl("200m", ""), nil), ctr("b", rl("200m", ""), nil))
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("500m", ""), Limits: rl("500m", "")}
			return p
		}(),
		// The sidecar's limit of 1.5 CPU counts in the pod total against
		// the LimitRange's pod maximum of 2, which a's new limit of 2
		// would pass.
		"sidecar init container": func() *corev1.Pod {
			p := testPod(nil, ctr("a", rl("100m", ""), rl("200m", "")))
			p.Spec.InitContainers = []corev1.Container{ctr("s", rl("1500m", ""), rl("1500m", ""))}
			p.Spec.InitContainers[0].RestartPolicy = &always
			return p
		}(),
		"init container above the pod maximum": func() *corev1.Pod {
			p := testPod(nil, ctr("a", rl("100m", ""), rl("200m", "")))
			p.Spec.InitContainers = []corev1.Container{ctr("i", rl("3", ""), rl("3", ""))}
			return p
		}(),
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			checkAgreement(t, raw)
		})
	}
}

// FuzzHandlerAgreement: on any pod the API server decodes, the handler's
// patch from its own decoder is the patch of the whole pod.
func FuzzHandlerAgreement(f *testing.F) {
	f.Add(`{"metadata":{"name":"p"},"spec":{"resources":{"requests":{"cpu":"500m"},"limits":{"cpu":"500m"}},"containers":[{"name":"a","resources":{"requests":{"cpu":"200m"}}},{"name":"b","resources":{"requests":{"cpu":"200m"}}}]}}`)
	f.Add(`{"spec":{"initContainers":[{"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"1500m"}}}],"containers":[{"name":"a","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m","memory":"1Gi"}}}]}}`)
	f.Add(`{"metadata":{"annotations":{"x":"y"}},"spec":{"containers":[{"name":"b","resources":{"limits":{"memory":"64Mi"}}},{"name":"a"}]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		checkAgreement(t, []byte(in))
	})
}
