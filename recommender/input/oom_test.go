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

package input

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/recommender/model"
)

var finished = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func pod(request string, statuses ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(request)}}}}},
		Status: corev1.PodStatus{ContainerStatuses: statuses},
	}
}

func running(restarts int32, lastOOM bool) corev1.ContainerStatus {
	s := corev1.ContainerStatus{Name: "app", RestartCount: restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	if lastOOM {
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", FinishedAt: finished}
	}
	return s
}

func terminated(restarts int32, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", RestartCount: restarts, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{Reason: reason, FinishedAt: finished}}}
}

func TestPodOOMs(t *testing.T) {
	tests := map[string]struct {
		old, new *corev1.Pod
		want     []model.ResourceAmount
	}{
		"running to OOMKilled":           {old: pod("100Mi", running(0, false)), new: pod("100Mi", terminated(0, "OOMKilled")), want: []model.ResourceAmount{100 << 20}},
		"terminated again after restart": {old: pod("100Mi", terminated(1, "OOMKilled")), new: pod("100Mi", terminated(2, "OOMKilled")), want: []model.ResourceAmount{100 << 20}},
		"still the same termination":     {old: pod("100Mi", terminated(1, "OOMKilled")), new: pod("100Mi", terminated(1, "OOMKilled"))},
		"other termination reason":       {old: pod("100Mi", running(0, false)), new: pod("100Mi", terminated(0, "Error"))},
		"restarted after OOM, old request": {
			old: pod("100Mi", running(0, false)), new: pod("300Mi", running(1, true)), want: []model.ResourceAmount{100 << 20},
		},
		"restarted after a crash": {old: pod("100Mi", running(0, false)), new: pod("100Mi", running(1, false))},
		"status resources win": {
			old: pod("100Mi", running(0, false)),
			new: func() *corev1.Pod {
				s := terminated(0, "OOMKilled")
				s.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("200Mi")}}
				return pod("100Mi", s)
			}(),
			want: []model.ResourceAmount{200 << 20},
		},
		"status resources equal to the spec": {
			old: pod("100Mi", running(0, false)),
			new: func() *corev1.Pod {
				s := terminated(0, "OOMKilled")
				s.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}}
				return pod("100Mi", s)
			}(),
			want: []model.ResourceAmount{100 << 20},
		},
	}
	for name, tc := range tests {
		// The informer caches trimmed pods: OOMs are found on those.
		t.Run(name, func(t *testing.T) {
			testPodOOMs(t, PodOOMs(trim(t, tc.old), trim(t, tc.new)), tc.want)
		})
	}
}

func trim(t *testing.T, p *corev1.Pod) *Pod {
	t.Helper()
	out, err := TrimPod(p)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*Pod)
}

// testPodOOMs checks that got holds one OOM of container app in pod p at
// finished per wanted memory amount.
func testPodOOMs(t *testing.T, got []OOM, want []model.ResourceAmount) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %d OOMs", got, len(want))
	}
	for i, o := range got {
		if o.Memory != want[i] || o.Container != "app" || !o.Time.Equal(finished.Time) || o.Pod.Name != "p" {
			t.Errorf("OOM %d = %+v, want memory %d at %v", i, o, want[i], finished)
		}
	}
}

func TestEvictionOOMs(t *testing.T) {
	ev := func(ann map[string]string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Annotations: ann, CreationTimestamp: finished},
			Reason:         "Evicted",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"},
		}
	}
	tests := map[string]struct {
		ev   *corev1.Event
		want map[string]model.ResourceAmount
	}{
		"memory starved": {ev: ev(map[string]string{"offending_containers": "a,b", "offending_containers_usage": "100Mi,5m", "starved_resource": "memory,cpu"}),
			want: map[string]model.ResourceAmount{"a": 100 << 20}},
		"length mismatch": {ev: ev(map[string]string{"offending_containers": "a,b", "offending_containers_usage": "100Mi", "starved_resource": "memory,memory"})},
		"no annotations":  {ev: ev(nil)},
		"bad quantity":    {ev: ev(map[string]string{"offending_containers": "a", "offending_containers_usage": "lots", "starved_resource": "memory"})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := EvictionOOMs(tc.ev)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %v", got, tc.want)
			}
			for _, o := range got {
				if tc.want[o.Container] != o.Memory || !o.Time.Equal(finished.Time) {
					t.Errorf("unexpected OOM %+v", o)
				}
			}
		})
	}
}

func TestObserverDropsWhenFull(t *testing.T) {
	o := NewOOMObserver()
	old, cur := trim(t, pod("100Mi", running(0, false))), trim(t, pod("100Mi", terminated(0, "OOMKilled")))
	for range OOMBufferSize + 10 {
		o.OnPodUpdate(old, cur)
	}
	if got := len(o.Drain()); got != OOMBufferSize {
		t.Errorf("drained %d, want %d", got, OOMBufferSize)
	}
	if got := len(o.Drain()); got != 0 {
		t.Errorf("second drain = %d, want 0", got)
	}
}

func TestTrimPod(t *testing.T) {
	requests := func(cpu, mem string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		if mem != "" {
			r.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return r
	}
	resized := requests("100m", "200Mi")
	started := metav1.NewTime(finished.Add(-time.Hour))
	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "9", Labels: map[string]string{"app": "a"},
			Annotations:     map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "x"}},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "i", Resources: requests("100m", "")}},
			Containers: []corev1.Container{
				{Name: "app", Image: "a", Env: []corev1.EnvVar{{Name: "E"}}, Resources: requests("100m", "100Mi")},
				{Name: "side", Resources: requests("10m", "")},
				{Name: "new", Resources: requests("10m", "50Mi")},
			},
			Volumes:  []corev1.Volume{{Name: "v"}},
			NodeName: "node",
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady}},
			PodIP:      "10.0.0.1",
			ContainerStatuses: []corev1.ContainerStatus{
				{
					Name: "app", RestartCount: 2, Image: "a", ImageID: "sha", Ready: true, Resources: &resized,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
						Reason: "OOMKilled", ExitCode: 137, FinishedAt: finished, StartedAt: started, Message: "m"}},
				},
				{Name: "side", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", FinishedAt: finished}}},
				{Name: "gone", RestartCount: 1},
			},
		},
	}
	want := &Pod{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "9", Labels: in.Labels},
		Phase:          corev1.PodRunning,
		InitContainers: []string{"init"},
		Containers: []Container{
			// The status's actuated request wins over the spec's.
			{Name: "app", Memory: 200 << 20, HasStatus: true, Running: true, RestartCount: 2,
				LastTerminated: &Termination{Reason: "OOMKilled", FinishedAt: finished},
				Spec:           Resources{CPURequest: 100, CPULimit: 1000, MemoryRequest: 100 << 20, MemoryLimit: -1}},
			{Name: "side", HasStatus: true, Terminated: &Termination{Reason: "Completed", FinishedAt: finished},
				Spec: Resources{CPURequest: 10, CPULimit: 1000, MemoryRequest: -1, MemoryLimit: -1}},
			// No status reported yet: the spec's request.
			{Name: "new", Memory: 50 << 20, Spec: Resources{CPURequest: 10, CPULimit: 1000, MemoryRequest: 50 << 20, MemoryLimit: -1}},
		},
	}
	got, err := TrimPod(in)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("TrimPod =\n%#v\nwant\n%#v", got, want)
	}
	again, err := TrimPod(got)
	if err != nil || again != got {
		t.Errorf("TrimPod of a trimmed pod = %v, %v; want it unchanged", again, err)
	}
}

func TestTrimPodWithSidecars(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	mem := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}}
	}
	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always, Resources: mem("64Mi")}},
			Containers:     []corev1.Container{{Name: "app", Resources: mem("100Mi")}},
		},
		Status: corev1.PodStatus{
			Phase:                 corev1.PodRunning,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup"}, {Name: "proxy", RestartCount: 3}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "app"}},
		},
	}
	got, err := TrimPodWithSidecars(in)
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*Pod)
	if len(p.InitContainers) != 1 || p.InitContainers[0] != "setup" {
		t.Errorf("init containers %v, want [setup]: a native sidecar is not an init container here", p.InitContainers)
	}
	if len(p.Containers) != 2 || p.Containers[1].Name != "proxy" || p.Containers[1].Memory != 64<<20 ||
		!p.Containers[1].HasStatus || p.Containers[1].RestartCount != 3 {
		t.Errorf("containers %+v, want app and proxy with its status", p.Containers)
	}
	plain, err := TrimPod(in)
	if err != nil {
		t.Fatal(err)
	}
	if pp := plain.(*Pod); len(pp.Containers) != 1 || len(pp.InitContainers) != 2 {
		t.Errorf("TrimPod kept the sidecar: %+v", pp)
	}
}

func TestOOMAfterUpdate(t *testing.T) {
	withAnnotations := func(created time.Time, ann map[string]string) *corev1.Pod {
		p := pod("100Mi", terminated(0, "OOMKilled"))
		p.CreationTimestamp = metav1.NewTime(created)
		p.Annotations = ann
		return p
	}
	patched := map[string]string{"vpaUpdates": "Pod resources updated by vpa: container 0: memory request"}
	resized := func(started time.Time) map[string]string {
		return map[string]string{"openvpa.io/in-place-resize": `{"started":"` + started.UTC().Format(time.RFC3339) + `"}`}
	}
	tests := map[string]struct {
		new  *corev1.Pod
		want bool
	}{
		"patched at creation 5 minutes before": {new: withAnnotations(finished.Add(-5*time.Minute), patched), want: true},
		"patched at creation an hour before":   {new: withAnnotations(finished.Add(-time.Hour), patched)},
		"never updated, created just before":   {new: withAnnotations(finished.Add(-time.Minute), nil)},
		"resized in place 2 minutes before": {
			new: withAnnotations(finished.Add(-48*time.Hour), resized(finished.Add(-2*time.Minute))), want: true,
		},
		"resized in place a day before": {new: withAnnotations(finished.Add(-48*time.Hour), resized(finished.Add(-24*time.Hour)))},
		"resize record unreadable":      {new: withAnnotations(finished.Add(-48*time.Hour), map[string]string{"openvpa.io/in-place-resize": "{"})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := PodOOMs(trim(t, pod("100Mi", running(0, false))), trim(t, tc.new))
			if len(got) != 1 {
				t.Fatalf("got %d OOMs, want 1", len(got))
			}
			if after := got[0].AfterUpdate(10 * time.Minute); after != tc.want {
				t.Errorf("AfterUpdate = %v, want %v (updated %v, killed %v)", after, tc.want, got[0].Updated, got[0].Time)
			}
		})
	}
}
