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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openvpa/openvpa/admission-controller/review"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/testbuild"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func rl(cpu, mem string) corev1.ResourceList { return testbuild.Resources(cpu, mem) }

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func testPod(annotations map[string]string, cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "ns", Labels: map[string]string{"app": "web"}, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: cs},
	}
}

type vpaOpt func(*vpav1.VerticalPodAutoscaler)

func testVPA(opts ...vpaOpt) *vpav1.VerticalPodAutoscaler {
	v := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web-vpa", Namespace: "ns"}}
	for _, o := range opts {
		o(v)
	}
	return v
}

func rec(name string, target corev1.ResourceList) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) {
		if v.Status.Recommendation == nil {
			v.Status.Recommendation = &vpav1.RecommendedPodResources{}
		}
		v.Status.Recommendation.ContainerRecommendations = append(v.Status.Recommendation.ContainerRecommendations,
			vpav1.RecommendedContainerResources{ContainerName: name, Target: target})
	}
}

func containerPolicy(p vpav1.ContainerResourcePolicy) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) {
		if v.Spec.ResourcePolicy == nil {
			v.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{}
		}
		v.Spec.ResourcePolicy.ContainerPolicies = append(v.Spec.ResourcePolicy.ContainerPolicies, p)
	}
}

func ptr[T any](v T) *T { return &v }

type goldenCase struct {
	pod *corev1.Pod
	vpa *vpav1.VerticalPodAutoscaler
	lr  limitrange.Merged
}

func goldenCases() map[string]goldenCase {
	requestsOnly := ptr(vpav1.ContainerControlledValuesRequestsOnly)
	return map[string]goldenCase{
		"no-resources": {
			pod: testPod(nil, ctr("app", nil, nil)),
			vpa: testVPA(rec("app", rl("250m", "200Mi"))),
		},
		"requests-without-limits": {
			pod: testPod(nil, ctr("app", rl("100m", "100Mi"), nil)),
			vpa: testVPA(rec("app", rl("250m", "200Mi"))),
		},
		"requests-and-limits": {
			pod: testPod(nil, ctr("app", rl("100m", "100Mi"), rl("200m", "150Mi"))),
			vpa: testVPA(rec("app", rl("250m", "200Mi"))),
		},
		"limits-only": {
			pod: testPod(nil, ctr("app", nil, rl("1", "1Gi"))),
			vpa: testVPA(rec("app", rl("250m", "200Mi"))),
		},
		"partial-maps": {
			pod: testPod(nil, ctr("app", rl("100m", ""), rl("", "300Mi"))),
			vpa: testVPA(rec("app", rl("250m", "200Mi"))),
		},
		"requests-only-keeps-limits": {
			pod: testPod(nil, ctr("app", rl("100m", "100Mi"), rl("500m", "1Gi"))),
			vpa: testVPA(rec("app", rl("800m", "200Mi")), containerPolicy(vpav1.ContainerResourcePolicy{ContainerName: "*", ControlledValues: requestsOnly})),
		},
		"min-max-allowed": {
			pod: testPod(nil, ctr("app", rl("100m", "100Mi"), nil)),
			vpa: testVPA(rec("app", rl("5m", "20Gi")), containerPolicy(vpav1.ContainerResourcePolicy{ContainerName: "app", MinAllowed: rl("50m", ""), MaxAllowed: rl("", "2Gi")})),
		},
		"container-limitrange-max-and-default": {
			pod: testPod(nil, ctr("app", rl("100m", "100Mi"), nil)),
			vpa: testVPA(rec("app", rl("2", "200Mi"))),
			lr: limitrange.Merged{Container: &corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, Max: rl("1", ""), Default: rl("200m", "")}},
		},
		"container-limitrange-min": {
			pod: testPod(nil, ctr("app", nil, nil)),
			vpa: testVPA(rec("app", rl("10m", "10Mi"))),
			lr: limitrange.Merged{Container: &corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, Min: rl("50m", "64Mi")}},
		},
		"pod-limitrange-max": {
			pod: testPod(nil, ctr("app", rl("1", ""), rl("2", "")), ctr("sidecar", rl("1", ""), rl("2", ""))),
			vpa: testVPA(rec("app", rl("1", "")), rec("sidecar", rl("1", ""))),
			lr:  limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("2", "")}},
		},
		"pod-limitrange-min": {
			pod: testPod(nil, ctr("app", rl("", "100Mi"), rl("", "100Mi")), ctr("sidecar", rl("", "100Mi"), rl("", "100Mi"))),
			vpa: testVPA(rec("app", rl("", "10Mi")), rec("sidecar", rl("", "30Mi"))),
			lr:  limitrange.Merged{Pod: &corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: rl("", "80Mi")}},
		},
		"extra-and-missing-containers": {
			pod: func() *corev1.Pod {
				p := testPod(nil, ctr("app", rl("100m", ""), nil), ctr("no-rec", rl("10m", ""), nil))
				p.Spec.InitContainers = []corev1.Container{ctr("init", rl("1", ""), nil)}
				return p
			}(),
			vpa: testVPA(rec("app", rl("300m", "")), rec("removed", rl("2", "2Gi")), rec("init", rl("5", ""))),
		},
		"no-recommendation": {
			pod: testPod(map[string]string{"keep": "me"}, ctr("app", rl("100m", ""), nil)),
			vpa: testVPA(),
		},
		"existing-annotations-kept": {
			pod: testPod(map[string]string{"team": "a", annotations.ObservedContainers: "stale"}, ctr("app", nil, nil)),
			vpa: testVPA(rec("app", rl("250m", ""))),
		},
		"empty-annotations-map": {
			pod: testPod(map[string]string{}, ctr("app", nil, nil)),
			vpa: testVPA(rec("app", rl("250m", ""))),
		},
		"controlled-resources-cpu-only": {
			pod: testPod(nil, ctr("app", rl("100m", "100Mi"), rl("200m", "200Mi"))),
			vpa: testVPA(rec("app", rl("250m", "1Gi")), containerPolicy(vpav1.ContainerResourcePolicy{ContainerName: "app", ControlledResources: &[]corev1.ResourceName{corev1.ResourceCPU}})),
		},
		"container-mode-off": {
			pod: testPod(nil, ctr("app", rl("100m", ""), nil), ctr("db", rl("100m", ""), nil)),
			vpa: testVPA(rec("app", rl("250m", "")), rec("db", rl("1", "")), containerPolicy(vpav1.ContainerResourcePolicy{ContainerName: "db", Mode: ptr(vpav1.ContainerScalingModeOff)})),
		},
		"resource-names-need-escaping": {
			pod: testPod(map[string]string{"example.com/owner~x": "y"}, ctr("app", corev1.ResourceList{"example.com/foo": resource.MustParse("1")}, nil)),
			vpa: testVPA(rec("app", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "example.com/a~b": resource.MustParse("2")}),
				containerPolicy(vpav1.ContainerResourcePolicy{ContainerName: "app", ControlledResources: &[]corev1.ResourceName{corev1.ResourceCPU, "example.com/a~b"}})),
		},
	}
}

// golden is what a golden file holds: the patch and, for the reader, the
// containers' resources and the annotations after applying it.
type golden struct {
	Patch       json.RawMessage               `json:"patch"`
	Annotations map[string]string             `json:"annotations"`
	Containers  []corev1.ResourceRequirements `json:"containers"`
	Init        []corev1.ResourceRequirements `json:"initContainers,omitempty"`
}

func TestCalculateGolden(t *testing.T) {
	for name, tc := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			input, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			// Decode as the webhook does, from JSON.
			var pod corev1.Pod
			if err := json.Unmarshal(input, &pod); err != nil {
				t.Fatal(err)
			}
			raw, _, err := AppendPatch(nil, decodedFrom(&pod), tc.vpa, tc.lr)
			if err != nil {
				t.Fatal(err)
			}
			// The reference builder (structs and encoding/json) gives the
			// same bytes, and so does the pod decoded by the handler's own
			// decoder.
			ref, _, err := referencePatch(&pod, tc.vpa, tc.lr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, ref) {
				t.Errorf("patch differs from the reference:\ngot  %s\nwant %s", raw, ref)
			}
			var d decoder
			fast, err := d.decode(input)
			if err != nil {
				t.Fatal(err)
			}
			if raw2, _, _ := AppendPatch(nil, fast, tc.vpa, tc.lr); !bytes.Equal(raw2, raw) {
				t.Errorf("patch of the pod from the fast decoder differs:\ngot  %s\nwant %s", raw2, raw)
			}
			decoded, err := jsonpatch.DecodePatch(raw)
			if err != nil {
				t.Fatalf("the patch is not RFC 6902: %v", err)
			}
			patched, err := decoded.Apply(input)
			if err != nil {
				t.Fatalf("the patch does not apply to its pod: %v\npatch: %s", err, raw)
			}
			var out corev1.Pod
			if err := json.Unmarshal(patched, &out); err != nil {
				t.Fatal(err)
			}
			g := golden{Patch: raw, Annotations: out.Annotations}
			for _, c := range out.Spec.Containers {
				g.Containers = append(g.Containers, c.Resources)
			}
			for i, c := range out.Spec.InitContainers {
				if !equalRequirements(c.Resources, tc.pod.Spec.InitContainers[i].Resources) {
					t.Errorf("init container %s changed", c.Name)
				}
				g.Init = append(g.Init, c.Resources)
			}
			for k, v := range tc.pod.Annotations {
				if k != annotations.ObservedContainers && out.Annotations[k] != v {
					t.Errorf("annotation %q = %q after patching, want it kept as %q", k, out.Annotations[k], v)
				}
			}
			got, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the computed result (go test -update rewrites it):\ngot:\n%s", path, got)
			}
		})
	}
}

func equalRequirements(a, b corev1.ResourceRequirements) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestEscape: resource and annotation names in JSON Patch paths are escaped
// as RFC 6901 says, "~" as "~0" before "/" as "~1". Upstream 1.8 escapes both
// in both places; 1.7 escaped only "/" and only in annotation names, so an
// extended resource such as example.com/gpu made a path the API server
// refused.
func TestEscape(t *testing.T) {
	tests := map[string]string{
		"plain":         "plain",
		"a/b":           "a~1b",
		"a~b":           "a~0b",
		"~/":            "~0~1",
		"example.com/x": "example.com~1x",
	}
	for in, want := range tests {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

type fakeFinder struct {
	vpa *vpav1.VerticalPodAutoscaler
	err error
}

func (f fakeFinder) ControllingVPA(context.Context, *Decoded) (*vpav1.VerticalPodAutoscaler, error) {
	return f.vpa, f.err
}

type fakeLimits struct{}

func (fakeLimits) LimitRanges(string) (limitrange.Merged, error) {
	return limitrange.Merged{}, nil
}

func TestAdmit(t *testing.T) {
	withRec := testVPA(rec("app", rl("1", "")))
	initial := testVPA(rec("app", rl("1", "")), func(v *vpav1.VerticalPodAutoscaler) {
		v.Spec.UpdatePolicy = &vpav1.PodUpdatePolicy{UpdateMode: ptr(vpav1.UpdateModeInitial)}
	})
	off := testVPA(rec("app", rl("1", "")), func(v *vpav1.VerticalPodAutoscaler) {
		v.Spec.UpdatePolicy = &vpav1.PodUpdatePolicy{UpdateMode: ptr(vpav1.UpdateModeOff)}
	})
	tests := map[string]struct {
		finder      fakeFinder
		wantOps     bool
		wantApplied bool
		wantErr     bool
	}{
		"no VPA":            {},
		"VPA in Recreate":   {finder: fakeFinder{vpa: withRec}, wantOps: true, wantApplied: true},
		"VPA in Initial":    {finder: fakeFinder{vpa: initial}, wantOps: true, wantApplied: true},
		"VPA in Off":        {finder: fakeFinder{vpa: off}},
		"VPA without a rec": {finder: fakeFinder{vpa: testVPA()}, wantOps: true},
		"finder error":      {finder: fakeFinder{err: errors.New("boom")}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := NewHandler(tc.finder, fakeLimits{})
			pod := testPod(nil, ctr("app", nil, nil))
			pod.Namespace = ""
			res, err := h.Admit(context.Background(), decodedFrom(pod), "ns", nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if (len(res.Patch) > 0) != tc.wantOps || res.Applied != tc.wantApplied {
				t.Errorf("patch %v applied %v, want ops %v applied %v", res.Patch, res.Applied, tc.wantOps, tc.wantApplied)
			}
			if err != nil && !strings.Contains(err.Error(), "web-%") {
				t.Errorf("error %q does not name the pod by generateName", err)
			}
		})
	}
}

type namespaceFinder struct{ seen *string }

func (f namespaceFinder) ControllingVPA(_ context.Context, p *Decoded) (*vpav1.VerticalPodAutoscaler, error) {
	*f.seen = p.Namespace
	return nil, nil
}

// TestAdmitRequestNamespace checks that a pod without metadata.namespace
// takes the review's namespace, and that a pod's own one is kept.
func TestAdmitRequestNamespace(t *testing.T) {
	for name, tc := range map[string]struct{ object, want string }{
		"from the review": {object: `{"metadata":{"generateName":"web-"},"spec":{"containers":[{"name":"a"}]}}`, want: "review-ns"},
		"the pod's own":   {object: `{"metadata":{"namespace":"pod-ns"},"spec":{"containers":[{"name":"a"}]}}`, want: "pod-ns"},
	} {
		t.Run(name, func(t *testing.T) {
			var seen string
			h := NewHandler(namespaceFinder{&seen}, fakeLimits{})
			if _, err := h.AdmitRequest(context.Background(), &review.Request{Namespace: []byte("review-ns"), Object: []byte(tc.object)}, nil); err != nil {
				t.Fatal(err)
			}
			if seen != tc.want {
				t.Errorf("namespace %q, want %q", seen, tc.want)
			}
		})
	}
}

type rangesOf []*corev1.LimitRange

func (r rangesOf) LimitRanges(string) (limitrange.Merged, error) {
	return limitrange.Merge(r), nil
}

type recordedEvent struct{ object, eventtype, reason, message string }

type fakeRecorder struct{ events []recordedEvent }

func (f *fakeRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	name := ""
	if v, ok := obj.(*vpav1.VerticalPodAutoscaler); ok {
		name = v.Name
	}
	f.events = append(f.events, recordedEvent{name, eventtype, reason, fmt.Sprintf(messageFmt, args...)})
}

// TestAdmitLimitRangeConflict checks that a recommendation the namespace's
// LimitRanges would refuse is not applied, and that the response warns and
// the VPA gets an event.
func TestAdmitLimitRangeConflict(t *testing.T) {
	maxRatio := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "ratio"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("2", ""), Max: rl("1", "")},
	}}}
	tests := map[string]struct {
		vpa         *vpav1.VerticalPodAutoscaler
		wantApplied bool
		wantReason  string
		wantWarning string
	}{
		"admissible": {vpa: testVPA(rec("app", rl("400m", ""))), wantApplied: true},
		"refused: left alone": {
			// The limit:request ratio of 4 is above the LimitRange's 2 whatever the request.
			vpa:         testVPA(rec("app", rl("400m", ""))),
			wantReason:  recommendation.ReasonLimitRangeConflict,
			wantWarning: "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &fakeRecorder{}
			var counted []string
			h := NewHandler(fakeFinder{vpa: tc.vpa}, rangesOf{maxRatio}).WithRecorder(rec).
				WithConflictCounter(func(reason string) { counted = append(counted, reason) })
			limits := rl("800m", "")
			if tc.wantReason == "" {
				limits = rl("400m", "")
			}
			pod := testPod(map[string]string{}, ctr("app", rl("200m", ""), limits))
			res, err := h.Admit(context.Background(), decodedFrom(pod), "ns", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Applied != tc.wantApplied {
				t.Errorf("applied = %v, want %v (patch %s)", res.Applied, tc.wantApplied, res.Patch)
			}
			if tc.wantReason == "" {
				if len(rec.events) != 0 || len(res.Warnings) != 0 || len(counted) != 0 {
					t.Errorf("events %v, warnings %q, counted %q; want none", rec.events, res.Warnings, counted)
				}
				return
			}
			if len(counted) != 1 || counted[0] != tc.wantReason {
				t.Errorf("conflicts counted %q, want one %s", counted, tc.wantReason)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tc.wantWarning) {
				t.Errorf("warnings = %q, want one saying %q", res.Warnings, tc.wantWarning)
			}
			if len(rec.events) != 1 || rec.events[0].reason != tc.wantReason || rec.events[0].eventtype != corev1.EventTypeWarning ||
				rec.events[0].object != tc.vpa.Name || !strings.Contains(rec.events[0].message, tc.wantWarning) {
				t.Errorf("events = %+v, want one %s warning on VPA %s", rec.events, tc.wantReason, tc.vpa.Name)
			}
		})
	}
}
