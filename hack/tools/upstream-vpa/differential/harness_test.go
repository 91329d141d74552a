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

package differential

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	upstreamvpav1 "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"
	upstreamconfig "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/config"
	upstreamlogic "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/logic"
	upstreammodel "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"
	upstreamroutines "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/routines"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

// The VPA both sides recommend for: it selects the pods labelled podLabels.
const (
	namespace = "differential"
	vpaName   = "app"
)

var podLabels = labels.Set{"app": "differential"}

// kind is what an event feeds.
type kind int

const (
	cpuSample    kind = iota // value: millicores
	memorySample             // value: bytes
	oomKill                  // value: the container's memory request, bytes
)

func (k kind) String() string {
	return [...]string{"cpu", "memory", "oom"}[k]
}

// event is one input of a usage history.
type event struct {
	at        time.Time
	pod       string
	container string
	kind      kind
	value     int64
}

func (e event) String() string {
	return fmt.Sprintf("%s %s %s/%s %d", e.at.Format(time.RFC3339), e.kind, e.pod, e.container, e.value)
}

// amounts are a resource list as integers: CPU in millicores, memory in
// bytes, a resource the list lacks left out.
type amounts map[corev1.ResourceName]int64

func amountsOf(l corev1.ResourceList) amounts {
	a := amounts{}
	if q, ok := l[corev1.ResourceCPU]; ok {
		a[corev1.ResourceCPU] = q.MilliValue()
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		a[corev1.ResourceMemory] = q.Value()
	}
	return a
}

// numbers are one container's recommendation.
type numbers struct {
	Target, LowerBound, UpperBound, UncappedTarget amounts
}

// recommendation is a VPA's recommendation by container name.
type recommendation map[string]numbers

// side is one recommender under test, fed event by event.
type side interface {
	// feed records e and reports whether the model accepted it.
	feed(e event) bool
	// recommend returns the recommendation of the VPA as its status would
	// hold it.
	recommend() recommendation
	// checkpoints returns the checkpoint status of each container, as JSON
	// with lastUpdateTime left out, as the recommender would write it at
	// now.
	checkpoints(t *testing.T, now time.Time) map[string][]byte
}

// recommenderConfig is upstream's recommendation configuration at its
// defaults, which OpenVPA's defaults equal.
func recommenderConfig() (upstreamlogic.RecommendationConfig, upstreamlogic.RecommendationFormat) {
	c := upstreamconfig.DefaultRecommenderConfig()
	return upstreamlogic.RecommendationConfig{
			SafetyMarginFraction:       c.SafetyMarginFraction,
			PodMinCPUMillicores:        c.PodMinCPUMillicores,
			PodMinMemoryMb:             c.PodMinMemoryMb,
			TargetCPUPercentile:        c.TargetCPUPercentile,
			LowerBoundCPUPercentile:    c.LowerBoundCPUPercentile,
			UpperBoundCPUPercentile:    c.UpperBoundCPUPercentile,
			ConfidenceIntervalCPU:      c.ConfidenceIntervalCPU,
			TargetMemoryPercentile:     c.TargetMemoryPercentile,
			LowerBoundMemoryPercentile: c.LowerBoundMemoryPercentile,
			UpperBoundMemoryPercentile: c.UpperBoundMemoryPercentile,
			ConfidenceIntervalMemory:   c.ConfidenceIntervalMemory,
		}, upstreamlogic.RecommendationFormat{
			HumanizeMemory:     c.HumanizeMemory,
			RoundCPUMillicores: c.RoundCPUMillicores,
			RoundMemoryBytes:   c.RoundMemoryBytes,
		}
}

// upstreamSide is upstream's recommender: its cluster state holding one VPA
// and the pods it selects, its estimators, and its capping post-processor,
// as its recommender loop chains them.
type upstreamSide struct {
	cluster upstreammodel.ClusterState
	vpa     *upstreammodel.Vpa
	obj     *upstreamvpav1.VerticalPodAutoscaler
}

// newUpstream returns upstream's recommender with a VPA of policy (JSON of
// a PodResourcePolicy, or empty) and, for each container in checkpoints,
// the state upstream's feeder restores from that checkpoint status (JSON).
func newUpstream(t *testing.T, policy string, checkpoints map[string][]byte) *upstreamSide {
	t.Helper()
	obj := &upstreamvpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: vpaName},
		Spec: upstreamvpav1.VerticalPodAutoscalerSpec{
			TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: vpaName},
		},
	}
	if policy != "" {
		obj.Spec.ResourcePolicy = &upstreamvpav1.PodResourcePolicy{}
		mustUnmarshal(t, []byte(policy), obj.Spec.ResourcePolicy)
	}
	cluster := upstreammodel.NewClusterState(time.Hour)
	if err := cluster.AddOrUpdateVpa(obj, labels.SelectorFromSet(podLabels)); err != nil {
		t.Fatal(err)
	}
	vpa := cluster.VPAs()[upstreammodel.VpaID{Namespace: namespace, VpaName: vpaName}]
	for container, status := range checkpoints {
		var cp upstreamvpav1.VerticalPodAutoscalerCheckpointStatus
		mustUnmarshal(t, status, &cp)
		state := upstreammodel.NewAggregateContainerState()
		if err := state.LoadFromCheckpoint(&cp); err != nil {
			t.Fatalf("upstream cannot load the checkpoint of %s: %v", container, err)
		}
		vpa.ContainersInitialAggregateState[container] = state
	}
	return &upstreamSide{cluster: cluster, vpa: vpa, obj: obj}
}

func (u *upstreamSide) feed(e event) bool {
	pod := upstreammodel.PodID{Namespace: namespace, PodName: e.pod}
	if _, ok := u.cluster.Pods()[pod]; !ok {
		u.cluster.AddOrUpdatePod(pod, podLabels, corev1.PodRunning)
	}
	id := upstreammodel.ContainerID{PodID: pod, ContainerName: e.container}
	if u.cluster.GetContainer(id) == nil {
		if err := u.cluster.AddOrUpdateContainer(id, nil); err != nil {
			panic(err)
		}
	}
	sample := func(r upstreammodel.ResourceName) bool {
		return u.cluster.AddSample(&upstreammodel.ContainerUsageSampleWithKey{
			ContainerUsageSample: upstreammodel.ContainerUsageSample{MeasureStart: e.at, Usage: upstreammodel.ResourceAmount(e.value), Resource: r},
			Container:            id,
		}) == nil
	}
	switch e.kind {
	case cpuSample:
		return sample(upstreammodel.ResourceCPU)
	case memorySample:
		return sample(upstreammodel.ResourceMemory)
	default:
		return u.cluster.RecordOOM(id, e.at, upstreammodel.ResourceAmount(e.value)) == nil
	}
}

func (u *upstreamSide) recommend() recommendation {
	cfg, format := recommenderConfig()
	resources := upstreamlogic.CreatePodResourceRecommender(cfg).GetRecommendedPodResources(upstreamroutines.GetContainerNameToAggregateStateMap(u.vpa))
	list := upstreamlogic.MapToListOfRecommendedContainerResources(resources, format)
	list = upstreamroutines.NewCappingRecommendationProcessor(nil).Process(u.obj, list)
	out := recommendation{}
	for _, c := range list.ContainerRecommendations {
		out[c.ContainerName] = numbers{amountsOf(c.Target), amountsOf(c.LowerBound), amountsOf(c.UpperBound), amountsOf(c.UncappedTarget)}
	}
	return out
}

// checkpoints does what upstream's checkpoint writer does for the VPA: merge
// its aggregates by container name, take out the still-open memory peak of
// each container of its pods whose window has not ended at now, and save.
func (u *upstreamSide) checkpoints(t *testing.T, now time.Time) map[string][]byte {
	t.Helper()
	states := u.vpa.AggregateStateByContainerName()
	// Upstream's writer visits the pods in map order, so that the last bit
	// of a total weight can differ from one run to the next; here both
	// sides visit them by name.
	pods := u.cluster.Pods()
	names := make([]string, 0, len(pods))
	byName := map[string]*upstreammodel.PodState{}
	for id, pod := range pods {
		names = append(names, id.PodName)
		byName[id.PodName] = pod
	}
	for _, podName := range sortedStrings(names) {
		pod := byName[podName]
		for name, c := range pod.Containers {
			state, ok := states[name]
			if !ok || !u.vpa.UsesAggregation(u.cluster.MakeAggregateStateKey(pod, name)) || !now.Before(c.WindowEnd) {
				continue
			}
			state.AggregateMemoryPeaks.SubtractSample(upstreammodel.BytesFromMemoryAmount(c.GetMaxMemoryPeak()), 1.0, c.WindowEnd)
		}
	}
	out := map[string][]byte{}
	for name, state := range states {
		status, err := state.SaveToCheckpoint()
		if err != nil {
			t.Fatalf("upstream cannot save the checkpoint of %s: %v", name, err)
		}
		status.LastUpdateTime = metav1.Time{}
		out[name] = mustMarshal(t, status)
	}
	return out
}

// oursSide is OpenVPA's recommender: one aggregate per container name of
// the VPA, one container state per pod and container feeding it, the
// percentile estimator and its Finish (which caps to the policy).
type oursSide struct {
	cfg        *model.Config
	policy     *vpav1.PodResourcePolicy
	aggregates map[string]*model.AggregateState
	containers map[[2]string]*model.ContainerState
}

// newOurs returns OpenVPA's recommender with a VPA of policy (JSON, or
// empty) and each container's aggregate restored from checkpoints (JSON)
// at now.
func newOurs(t *testing.T, policy string, checkpoints map[string][]byte, now time.Time) *oursSide {
	t.Helper()
	o := &oursSide{
		cfg:        model.DefaultConfig(),
		aggregates: map[string]*model.AggregateState{},
		containers: map[[2]string]*model.ContainerState{},
	}
	if policy != "" {
		o.policy = &vpav1.PodResourcePolicy{}
		mustUnmarshal(t, []byte(policy), o.policy)
	}
	for container, status := range checkpoints {
		var cp vpav1.VerticalPodAutoscalerCheckpointStatus
		mustUnmarshal(t, status, &cp)
		a, err := model.RestoreCheckpoint(o.cfg, &cp, now)
		if err != nil {
			t.Fatalf("OpenVPA cannot restore the checkpoint of %s: %v", container, err)
		}
		o.aggregates[container] = a
	}
	return o
}

func (o *oursSide) feed(e event) bool {
	a, ok := o.aggregates[e.container]
	if !ok {
		a = model.NewAggregateState(o.cfg, e.at)
		o.aggregates[e.container] = a
	}
	key := [2]string{e.pod, e.container}
	c, ok := o.containers[key]
	if !ok {
		c = model.NewContainerState(a)
		o.containers[key] = c
	}
	switch e.kind {
	case cpuSample:
		return c.AddCPUSample(e.at, model.ResourceAmount(e.value))
	case memorySample:
		return c.AddMemorySample(e.at, model.ResourceAmount(e.value))
	default:
		return c.RecordOOM(e.at, model.ResourceAmount(e.value)) == nil
	}
}

func (o *oursSide) recommend() recommendation {
	res := estimator.NewPercentile(estimator.DefaultConfig()).Recommend(o.aggregates, o.policy, nil)
	out := recommendation{}
	for _, c := range res.Containers {
		out[c.ContainerName] = numbers{amountsOf(c.Target), amountsOf(c.LowerBound), amountsOf(c.UpperBound), amountsOf(c.UncappedTarget)}
	}
	return out
}

func (o *oursSide) checkpoints(t *testing.T, now time.Time) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	keys := make([][2]string, 0, len(o.containers))
	for key := range o.containers {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0] < keys[j][0] })
	for name, a := range o.aggregates {
		var open []*model.ContainerState
		for _, key := range keys {
			if key[1] == name {
				open = append(open, o.containers[key])
			}
		}
		status, err := model.SaveCheckpoint(a, open, now)
		if err != nil {
			t.Fatalf("OpenVPA cannot save the checkpoint of %s: %v", name, err)
		}
		status.LastUpdateTime = metav1.Time{}
		out[name] = mustMarshal(t, status)
	}
	return out
}

// feedBoth feeds every event to both sides and fails when one side accepts
// an event the other refuses. It returns the events both refused.
func feedBoth(t *testing.T, upstream, ours side, history []event) []event {
	t.Helper()
	var refused []event
	for _, e := range history {
		u, o := upstream.feed(e), ours.feed(e)
		if u != o {
			t.Fatalf("%s: upstream accepted it: %v, OpenVPA: %v", e, u, o)
		}
		if !u {
			refused = append(refused, e)
		}
	}
	return refused
}

// compare fails, listing every difference, when two recommendations differ.
func compare(t *testing.T, what string, upstream, ours recommendation) {
	t.Helper()
	names := map[string]bool{}
	for n := range upstream {
		names[n] = true
	}
	for n := range ours {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		u, uok := upstream[n]
		o, ook := ours[n]
		if uok != ook {
			t.Errorf("%s, container %s: upstream recommends it: %v, OpenVPA: %v", what, n, uok, ook)
			continue
		}
		for _, f := range []struct {
			field  string
			up, us amounts
		}{
			{"target", u.Target, o.Target}, {"lowerBound", u.LowerBound, o.LowerBound},
			{"upperBound", u.UpperBound, o.UpperBound}, {"uncappedTarget", u.UncappedTarget, o.UncappedTarget},
		} {
			if fmt.Sprint(f.up) != fmt.Sprint(f.us) {
				t.Errorf("%s, container %s, %s: upstream %v, OpenVPA %v", what, n, f.field, f.up, f.us)
			}
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}
