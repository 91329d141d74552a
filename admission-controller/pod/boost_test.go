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
	"context"
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/boost"
	"github.com/openvpa/openvpa/pkg/target"
)

func factorBoost(f int32) *vpav1.StartupBoost {
	return &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: &f}}
}

func quantityBoost(q string) *vpav1.StartupBoost {
	v := resource.MustParse(q)
	return &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.QuantityStartupBoostType, Quantity: &v}}
}

func podBoost(b *vpav1.StartupBoost) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) { v.Spec.StartupBoost = b }
}

func mode(m vpav1.UpdateMode) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy = &vpav1.PodUpdatePolicy{UpdateMode: &m} }
}

func TestStartupBoost(t *testing.T) {
	requestsOnly := ptr(vpav1.ContainerControlledValuesRequestsOnly)
	cases := map[string]struct {
		pod      *corev1.Pod
		vpa      *vpav1.VerticalPodAutoscaler
		maxBoost string
		lr       rangesOf
		// want are the resulting resources of container 0.
		wantReq, wantLim corev1.ResourceList
		// wantMark is the boost annotation of container 0, "" for none.
		wantMark    string
		wantWarning bool
	}{
		"factor boosts the recommendation, limit keeps its ratio": {
			pod:     testPod(nil, ctr("app", rl("100m", "100Mi"), rl("200m", "200Mi"))),
			vpa:     testVPA(rec("app", rl("250m", "150Mi")), podBoost(factorBoost(3))),
			wantReq: rl("750m", "150Mi"), wantLim: rl("1500m", "300Mi"),
			wantMark: `{"requests":{"cpu":"100m","memory":"100Mi"},"limits":{"cpu":"200m","memory":"200Mi"}}`,
		},
		"quantity is added to the recommendation": {
			pod:     testPod(nil, ctr("app", rl("100m", ""), nil)),
			vpa:     testVPA(rec("app", rl("250m", "")), podBoost(quantityBoost("1"))),
			wantReq: rl("1250m", ""), wantMark: `{"requests":{"cpu":"100m"},"limits":{}}`,
		},
		"without a recommendation the container's own request is boosted": {
			pod:     testPod(nil, ctr("app", rl("200m", ""), nil)),
			vpa:     testVPA(podBoost(factorBoost(2))),
			wantReq: rl("400m", ""), wantMark: `{"requests":{"cpu":"200m"},"limits":{}}`,
		},
		"Off mode boosts the container's request and applies no recommendation": {
			pod:     testPod(nil, ctr("app", rl("100m", "100Mi"), nil)),
			vpa:     testVPA(rec("app", rl("500m", "500Mi")), podBoost(factorBoost(2)), mode(vpav1.UpdateModeOff)),
			wantReq: rl("200m", "100Mi"), wantMark: `{"requests":{"cpu":"100m","memory":"100Mi"},"limits":{}}`,
		},
		"container mode Off is not boosted": {
			pod: testPod(nil, ctr("app", rl("100m", ""), nil)),
			vpa: testVPA(rec("app", rl("300m", "")), podBoost(factorBoost(2)),
				containerPolicy(vpav1.ContainerResourcePolicy{ContainerName: "app", Mode: ptr(vpav1.ContainerScalingModeOff), ControlledValues: requestsOnly})),
			wantReq: rl("100m", ""),
		},
		"a container policy's boost wins over the VPA's": {
			pod: testPod(nil, ctr("app", rl("100m", ""), nil)),
			vpa: testVPA(rec("app", rl("100m", "")), podBoost(factorBoost(2)),
				containerPolicy(vpav1.ContainerResourcePolicy{ContainerName: "app", StartupBoost: factorBoost(5)})),
			wantReq: rl("500m", ""), wantMark: `{"requests":{"cpu":"100m"},"limits":{}}`,
		},
		"--max-allowed-cpu-boost caps the boost": {
			pod:      testPod(nil, ctr("app", rl("100m", ""), nil)),
			vpa:      testVPA(rec("app", rl("1", "")), podBoost(factorBoost(4))),
			maxBoost: "2",
			wantReq:  rl("2", ""), wantMark: `{"requests":{"cpu":"100m"},"limits":{}}`,
		},
		"RequestsOnly stays 1m under the CPU limit": {
			pod: testPod(nil, ctr("app", rl("100m", ""), rl("500m", ""))),
			vpa: testVPA(rec("app", rl("200m", "")), podBoost(factorBoost(4)),
				containerPolicy(vpav1.ContainerResourcePolicy{ContainerName: "*", ControlledValues: requestsOnly})),
			wantReq: rl("499m", ""), wantLim: rl("500m", ""), wantMark: `{"requests":{"cpu":"100m"},"limits":{"cpu":"500m"}}`,
		},
		"a boost the LimitRange refuses is not applied": {
			pod:     testPod(nil, ctr("app", rl("100m", ""), rl("200m", ""))),
			vpa:     testVPA(rec("app", rl("300m", "")), podBoost(factorBoost(10))),
			lr:      rangesOf{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: rl("1", "")}}}}},
			wantReq: rl("300m", ""), wantLim: rl("600m", ""), wantWarning: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var max resource.Quantity
			if tc.maxBoost != "" {
				max = resource.MustParse(tc.maxBoost)
			}
			finder := fakeFinder{vpa: tc.vpa}
			var limits LimitRangeLister = fakeLimits{}
			if tc.lr != nil {
				limits = tc.lr
			}
			h := NewHandler(finder, limits).WithStartupBoost(max)
			input, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.AdmitJSON(context.Background(), input, "ns", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Warnings) > 0; got != tc.wantWarning {
				t.Errorf("warnings %q, want some: %v", res.Warnings, tc.wantWarning)
			}
			out := tc.pod.DeepCopy()
			if len(res.Patch) > 0 {
				p, err := jsonpatch.DecodePatch(res.Patch)
				if err != nil {
					t.Fatal(err)
				}
				patched, err := p.Apply(input)
				if err != nil {
					t.Fatalf("%v\n%s", err, res.Patch)
				}
				out = &corev1.Pod{}
				if err := json.Unmarshal(patched, out); err != nil {
					t.Fatal(err)
				}
			}
			c := out.Spec.Containers[0]
			if !sameList(c.Resources.Requests, tc.wantReq) {
				t.Errorf("requests %v, want %v", c.Resources.Requests, tc.wantReq)
			}
			if tc.wantLim != nil && !sameList(c.Resources.Limits, tc.wantLim) {
				t.Errorf("limits %v, want %v", c.Resources.Limits, tc.wantLim)
			}
			if got := out.Annotations[boost.Annotation("app")]; got != tc.wantMark {
				t.Errorf("boost annotation %q, want %q", got, tc.wantMark)
			}
			if tc.wantMark != "" && out.Annotations[annotations.Updates] == "" {
				t.Errorf("a boosted pod has no %s annotation", annotations.Updates)
			}
		})
	}
}

func TestStartupBoostNeedsTheGate(t *testing.T) {
	vpa := testVPA(rec("app", rl("250m", "")), podBoost(factorBoost(3)))
	pod := testPod(nil, ctr("app", rl("100m", ""), nil))
	input, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewHandler(fakeFinder{vpa: vpa}, fakeLimits{}).AdmitJSON(context.Background(), input, "ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := jsonpatch.DecodePatch(res.Patch)
	patched, err := p.Apply(input)
	if err != nil {
		t.Fatal(err)
	}
	var out corev1.Pod
	if err := json.Unmarshal(patched, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "250m" {
		t.Errorf("cpu request %s without the gate, want the recommendation 250m", got.String())
	}
	if _, ok := out.Annotations[boost.Annotation("app")]; ok {
		t.Error("boost annotation set without the gate")
	}
	off := testVPA(podBoost(factorBoost(3)), mode(vpav1.UpdateModeOff))
	res, err = NewHandler(fakeFinder{vpa: off}, fakeLimits{}).AdmitJSON(context.Background(), input, "ns", nil)
	if err != nil || len(res.Patch) != 0 {
		t.Errorf("an Off VPA patched a pod without the gate: %s %v", res.Patch, err)
	}
}

func TestFinderMatchesOffVPAsWithABoostOnlyWithTheGate(t *testing.T) {
	off := testVPA(podBoost(factorBoost(2)), mode(vpav1.UpdateModeOff))
	off.CreationTimestamp = metav1.Now()
	for _, gate := range []bool{false, true} {
		f := newTestFinder(t, off)
		if gate {
			f.WithStartupBoost()
		}
		got, err := f.ControllingVPA(context.Background(), finderPod())
		if err != nil {
			t.Fatal(err)
		}
		if (got != nil) != gate {
			t.Errorf("gate %v: matched %v", gate, got)
		}
	}
}

// fixedResolver resolves every owner to Deployment web and every VPA to the
// selector app=web.
type fixedResolver struct{}

func (fixedResolver) TopmostController(_ context.Context, ref target.Ref) (*target.Ref, error) {
	return &target.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ref.Namespace, Name: "web"}, nil
}

func (fixedResolver) Selector(context.Context, *vpav1.VerticalPodAutoscaler) (labels.Selector, error) {
	return labels.SelectorFromSet(labels.Set{"app": "web"}), nil
}

func newTestFinder(t *testing.T, vpa *vpav1.VerticalPodAutoscaler) *Finder {
	t.Helper()
	v := vpa.DeepCopy()
	v.Spec.TargetRef = &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	vpas := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{TargetRefIndex: TargetRefIndexFunc})
	if err := vpas.Add(v); err != nil {
		t.Fatal(err)
	}
	return NewFinder(vpas, fixedResolver{}, nil)
}

func finderPod() *Decoded {
	return &Decoded{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"},
		OwnerReferences: []Owner{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr(true)}}}
}

func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if g, ok := a[k]; !ok || g.Cmp(v) != 0 {
			return false
		}
	}
	return true
}
