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

package scalepoint

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
)

// store is the API server: whole HPAs, read through Trim as the cache.
type store struct {
	hpas      map[string]*autoscalingv2.HorizontalPodAutoscaler
	forbidden bool
	updates   int
}

func (s *store) Get(_ context.Context, ns, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	h, ok := s.hpas[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, name)
	}
	return h.DeepCopy(), nil
}

func (s *store) Update(_ context.Context, h *autoscalingv2.HorizontalPodAutoscaler) error {
	if s.forbidden {
		return apierrors.NewForbidden(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, h.Name, nil)
	}
	s.updates++
	s.hpas[h.Namespace+"/"+h.Name] = h.DeepCopy()
	return nil
}

func (s *store) trimmed() []*autoscalingv2.HorizontalPodAutoscaler {
	var out []*autoscalingv2.HorizontalPodAutoscaler
	for _, h := range s.hpas {
		o, _ := hpa.Trim(h.DeepCopy())
		out = append(out, o.(*autoscalingv2.HorizontalPodAutoscaler))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *store) Lookup(ns string) ([]*autoscalingv2.HorizontalPodAutoscaler, bool) {
	var out []*autoscalingv2.HorizontalPodAutoscaler
	for _, h := range s.trimmed() {
		if h.Namespace == ns {
			out = append(out, h)
		}
	}
	return out, true
}

func (s *store) All() []*autoscalingv2.HorizontalPodAutoscaler { return s.trimmed() }

func newHPA(annotation string, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"team": "a"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 10, Metrics: metrics,
		},
	}
	if annotation != "" {
		h.Annotations = map[string]string{hpa.ScalePointAnnotation: annotation}
	}
	return h
}

func cpuAt(v int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(v)}}}
}

func appMemoryAt(v int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: corev1.ResourceMemory, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(v)}}}
}

func recorded(metrics ...hpa.RecordedMetric) string {
	return (&hpa.Record{VPA: "web", Metrics: metrics}).Encode()
}

func cpuRecord(original int32, request string, set int32) hpa.RecordedMetric {
	return hpa.RecordedMetric{Resource: corev1.ResourceCPU, Original: original, Request: resource.MustParse(request), Set: set}
}

func newVPA(mode bool) *vpav1.VerticalPodAutoscaler {
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec:       vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
	}
	if mode {
		v.Annotations = map[string]string{hpa.ModeAnnotation: hpa.ModeScalePoint}
	}
	return v
}

func runningPod(name, cpu, memory string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}},
			{Name: "log", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("64Mi")}}},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func TestSync(t *testing.T) {
	pending := runningPod("pending", "1", "1Gi")
	pending.Status.Phase = corev1.PodPending
	for name, tc := range map[string]struct {
		vpas      []*vpav1.VerticalPodAutoscaler
		hpa       *autoscalingv2.HorizontalPodAutoscaler
		pods      []*corev1.Pod
		forbidden bool
		// want: the HPA's cpu target, its record ("" none), the events
		// (reasons) and the writes by action/result.
		wantTarget int32
		wantRecord string
		wantEvents []string
		wantWrites map[string]int
	}{
		"recorded at the current requests": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA("", cpuAt(50)),
			pods:       []*corev1.Pod{runningPod("a", "200m", "1Gi"), runningPod("b", "200m", "1Gi"), pending},
			wantTarget: 50, wantRecord: recorded(cpuRecord(50, "200m", 50)),
			wantEvents: []string{ReasonRecorded}, wantWrites: map[string]int{"record/success": 1},
		},
		"no mode, nothing written": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(false)}, hpa: newHPA("", cpuAt(50)),
			pods: []*corev1.Pod{runningPod("a", "200m", "1Gi")}, wantTarget: 50,
		},
		"no running pod, not recorded": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA("", cpuAt(50)),
			pods: []*corev1.Pod{pending}, wantTarget: 50,
		},
		"requests doubled, target halved": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA(recorded(cpuRecord(50, "200m", 50)), cpuAt(50)),
			pods:       []*corev1.Pod{runningPod("a", "400m", "1Gi"), runningPod("b", "400m", "1Gi")},
			wantTarget: 25, wantRecord: recorded(cpuRecord(50, "200m", 25)),
			wantEvents: []string{ReasonRetuned}, wantWrites: map[string]int{"retune/success": 1},
		},
		"mean over a rollout": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA(recorded(cpuRecord(50, "200m", 50)), cpuAt(50)),
			pods:       []*corev1.Pod{runningPod("a", "400m", "1Gi"), runningPod("b", "200m", "1Gi")},
			wantTarget: 33, wantRecord: recorded(cpuRecord(50, "200m", 33)),
			wantEvents: []string{ReasonRetuned}, wantWrites: map[string]int{"retune/success": 1},
		},
		"from the original, not the last target": {
			// 50 × 300/400 = 37.5; from the set 38 it would be 28.
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA(recorded(cpuRecord(50, "300m", 38)), cpuAt(38)),
			pods:       []*corev1.Pod{runningPod("a", "300m", "1Gi")},
			wantTarget: 50, wantRecord: recorded(cpuRecord(50, "300m", 50)),
			wantEvents: []string{ReasonRetuned}, wantWrites: map[string]int{"retune/success": 1},
		},
		"kept, nothing to write": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA(recorded(cpuRecord(50, "200m", 25)), cpuAt(25)),
			pods:       []*corev1.Pod{runningPod("a", "400m", "1Gi")},
			wantTarget: 25, wantRecord: recorded(cpuRecord(50, "200m", 25)),
		},
		"reverted to the original (GitOps), retuned again": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA(recorded(cpuRecord(50, "200m", 25)), cpuAt(50)),
			pods:       []*corev1.Pod{runningPod("a", "400m", "1Gi")},
			wantTarget: 25, wantRecord: recorded(cpuRecord(50, "200m", 25)),
			wantEvents: []string{ReasonRetuned}, wantWrites: map[string]int{"retune/success": 1},
		},
		"a new target set by hand is the new original": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA(recorded(cpuRecord(50, "200m", 25)), cpuAt(70)),
			pods:       []*corev1.Pod{runningPod("a", "400m", "1Gi")},
			wantTarget: 70, wantRecord: recorded(cpuRecord(70, "400m", 70)),
			wantEvents: []string{ReasonRecorded}, wantWrites: map[string]int{"record/success": 1},
		},
		"VPA left the mode, restored": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(false)}, hpa: newHPA(recorded(cpuRecord(50, "200m", 25)), cpuAt(25)),
			pods:       []*corev1.Pod{runningPod("a", "400m", "1Gi")},
			wantTarget: 50, wantEvents: []string{ReasonRestored}, wantWrites: map[string]int{"restore/success": 1},
		},
		"VPA deleted, restored": {
			hpa:        newHPA(recorded(cpuRecord(50, "200m", 25)), cpuAt(25)),
			wantTarget: 50, wantEvents: []string{ReasonRestored}, wantWrites: map[string]int{"restore/success": 1},
		},
		"no RBAC: the failure names it, nothing changes": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)}, hpa: newHPA("", cpuAt(50)),
			pods: []*corev1.Pod{runningPod("a", "200m", "1Gi")}, forbidden: true,
			wantTarget: 50, wantEvents: []string{ReasonRetuneFailed}, wantWrites: map[string]int{"record/forbidden": 1},
		},
		"a ContainerResource metric counts its container only": {
			vpas: []*vpav1.VerticalPodAutoscaler{newVPA(true)},
			hpa: newHPA(recorded(cpuRecord(50, "200m", 50), hpa.RecordedMetric{Resource: corev1.ResourceMemory, Container: "app", Original: 80, Request: resource.MustParse("1Gi"), Set: 80}),
				cpuAt(50), appMemoryAt(80)),
			pods:       []*corev1.Pod{runningPod("a", "200m", "2Gi")},
			wantTarget: 50,
			wantRecord: recorded(cpuRecord(50, "200m", 50), hpa.RecordedMetric{Resource: corev1.ResourceMemory, Container: "app", Original: 80, Request: resource.MustParse("1Gi"), Set: 40}),
			wantEvents: []string{ReasonRetuned}, wantWrites: map[string]int{"retune/success": 1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := &store{hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{"ns/web": tc.hpa}, forbidden: tc.forbidden}
			writes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "w"}, []string{"action", "result"})
			rec := record.NewFakeRecorder(10)
			k := &Keeper{
				VPAs: func() ([]*vpav1.VerticalPodAutoscaler, error) { return tc.vpas, nil },
				Selector: func(context.Context, *vpav1.VerticalPodAutoscaler) (labels.Selector, error) {
					return labels.Everything(), nil
				},
				Pods: func(string, labels.Selector) ([]*corev1.Pod, error) {
					return tc.pods, nil
				},
				HPAs: s, Client: s, Recorder: rec, Writes: writes,
			}
			if err := k.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			h := s.hpas["ns/web"]
			if got, _ := hpa.UtilizationTarget(h, corev1.ResourceCPU, ""); got != tc.wantTarget {
				t.Errorf("cpu target %d, want %d", got, tc.wantTarget)
			}
			if got := h.Annotations[hpa.ScalePointAnnotation]; got != tc.wantRecord {
				t.Errorf("record %s, want %s", got, tc.wantRecord)
			}
			if h.Labels["team"] != "a" || h.Spec.MaxReplicas != 10 {
				t.Errorf("the write lost the rest of the HPA: %+v", h)
			}
			close(rec.Events)
			var reasons []string
			for e := range rec.Events {
				reasons = append(reasons, strings.Fields(e)[1])
				if strings.Contains(e, ReasonRetuneFailed) && !strings.Contains(e, "deploy/components/hpa-scale-point") {
					t.Errorf("the failure does not name the RBAC: %s", e)
				}
			}
			if strings.Join(reasons, ",") != strings.Join(tc.wantEvents, ",") {
				t.Errorf("events %v, want %v", reasons, tc.wantEvents)
			}
			for _, a := range []string{ActionRecord, ActionRetune, ActionRestore} {
				for _, r := range []string{"success", "forbidden", "error"} {
					if got := int(testutil.ToFloat64(writes.WithLabelValues(a, r))); got != tc.wantWrites[a+"/"+r] {
						t.Errorf("writes %s/%s = %d, want %d", a, r, got, tc.wantWrites[a+"/"+r])
					}
				}
			}
			// A second pass over the written HPA writes nothing more.
			before := s.updates
			k.Recorder = record.NewFakeRecorder(10)
			if err := k.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if s.updates != before && !tc.forbidden {
				t.Errorf("a second pass wrote %d more times", s.updates-before)
			}
		})
	}
}

func TestMeanRequest(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	withSidecar := runningPod("s", "300m", "1Gi")
	withSidecar.Spec.InitContainers = []corev1.Container{
		{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
		{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}}},
	}
	podLevel := runningPod("p", "300m", "1Gi")
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	missing := runningPod("m", "300m", "1Gi")
	delete(missing.Spec.Containers[1].Resources.Requests, corev1.ResourceCPU)
	for name, tc := range map[string]struct {
		pods      []*corev1.Pod
		res       corev1.ResourceName
		container string
		want      string
		ok        bool
	}{
		"containers summed":                   {pods: []*corev1.Pod{runningPod("a", "300m", "1Gi")}, res: corev1.ResourceCPU, want: "300m", ok: true},
		"mean":                                {pods: []*corev1.Pod{runningPod("a", "300m", "1Gi"), runningPod("b", "100m", "1Gi")}, res: corev1.ResourceCPU, want: "200m", ok: true},
		"sidecars count, init containers not": {pods: []*corev1.Pod{withSidecar}, res: corev1.ResourceCPU, want: "400m", ok: true},
		"pod-level request wins":              {pods: []*corev1.Pod{podLevel}, res: corev1.ResourceCPU, want: "1", ok: true},
		"but not for a container metric":      {pods: []*corev1.Pod{podLevel}, res: corev1.ResourceCPU, container: "app", want: "300m", ok: true},
		"memory in bytes":                     {pods: []*corev1.Pod{runningPod("a", "1", "1Gi")}, res: corev1.ResourceMemory, want: "1088Mi", ok: true},
		"a pod missing a request is left out": {pods: []*corev1.Pod{missing, runningPod("a", "100m", "1Gi")}, res: corev1.ResourceCPU, want: "100m", ok: true},
		"no pod":                              {res: corev1.ResourceCPU},
		"unknown container":                   {pods: []*corev1.Pod{runningPod("a", "1", "1Gi")}, res: corev1.ResourceCPU, container: "nope"},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := MeanRequest(tc.pods, tc.res, tc.container)
			if ok != tc.ok || ok && got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("MeanRequest = %s, %v; want %s, %v", got.String(), ok, tc.want, tc.ok)
			}
		})
	}
}
