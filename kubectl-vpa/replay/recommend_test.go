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

package replay

import (
	"context"
	"sort"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/kubectl-vpa/replay/replaytest"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/cluster"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

// recommenderAfter is what the recommender writes for a new VPA on the
// pods labelled app=web once it has fed the namespace's history through its
// own code (recommender/cluster's FeedHistory), with default flags.
func recommenderAfter(t *testing.T, pods []*history.Pod, end time.Time) estimator.Result {
	t.Helper()
	ctx := context.Background()
	s := cluster.New(cluster.Config{RecommenderName: vpav1.DefaultRecommenderName, HistoryPending: true})
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
	}
	resolve := func(_ context.Context, v *vpav1.VerticalPodAutoscaler) (*target.Target, error) {
		return &target.Target{VPA: v, Ref: target.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}, nil
	}
	s.SyncVPAs(ctx, []*vpacache.VPA{vpacache.New(v)}, resolve)
	ns := &history.Namespace{Name: "shop", Start: end.Add(-12 * 24 * time.Hour), End: end, Pods: map[string]*history.Pod{}}
	for _, p := range pods {
		labelled := *p
		labelled.Labels = map[string]string{"app": "web"}
		ns.Pods[p.Name] = &labelled
	}
	s.FeedHistory(ctx, ns, end)
	vs := s.Get(cluster.KeyOf(v))
	if vs == nil || !vs.HistoryDone {
		t.Fatal("the recommender's state did not take the history")
	}
	return estimator.NewPercentile(estimator.DefaultConfig()).Recommend(vs.Recommendable(), nil, nil)
}

// TestRecommendIsTheRecommendersAfterHistory: the recommendation after a
// history read from Prometheus is the recommender's own after feeding the
// same history, for a Deployment whose replicas overlap and roll over (each
// pod's memory windows of its own), with a step that has CPU but no memory.
// Fed as one pod (the replay's trace of the highest usage at each step) the
// same history recommends otherwise.
func TestRecommendIsTheRecommendersAfterHistory(t *testing.T) {
	end := replayEnd.Add(-time.Hour)
	h := replaytest.Synthetic("shop", end, 10)
	pods := h.PodHistories()
	// An unpaired point: the recommender takes it, the replay's trace
	// does not.
	last := pods[len(pods)-1].Containers["app"]
	last.CPU = append(last.CPU, history.Sample{Time: end.Add(5 * time.Minute), Value: 900})
	want := recommenderAfter(t, pods, end)
	if len(want.Containers) != 2 {
		t.Fatalf("the recommender recommends %+v, want app and sidecar", want.Containers)
	}

	r, err := NewCommandOptions().Recommender()
	if err != nil {
		t.Fatal(err)
	}
	got := r.Recommend(&Workload{Name: "deployment/web", Pods: pods}, nil)
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("Recommend\n got %+v\nwant the recommender's %+v", got, want)
	}

	// As one pod of the highest usage at each step: not the recommender's.
	var csv []*Container
	for _, name := range h.Containers {
		c := &Container{Name: name}
		peak := map[time.Time]*Sample{}
		var order []time.Time
		for _, p := range pods {
			for i, s := range p.Containers[name].Memory {
				cpu := p.Containers[name].CPU[i]
				at := peak[s.Time]
				if at == nil {
					at = &Sample{Time: s.Time}
					peak[s.Time] = at
					order = append(order, s.Time)
				}
				at.CPU = max(at.CPU, float64(cpu.Value)/1000)
				at.Memory = max(at.Memory, float64(s.Value))
			}
		}
		sort.Slice(order, func(i, j int) bool { return order[i].Before(order[j]) })
		for _, t := range order {
			c.Samples = append(c.Samples, *peak[t])
		}
		csv = append(csv, c)
	}
	if one := r.Recommend(&Workload{Name: "web", Containers: csv}, nil); apiequality.Semantic.DeepEqual(one.Containers, want.Containers) {
		t.Errorf("the history as one pod gives the recommender's recommendation too: the test cannot tell them apart")
	}
}

// TestRecommendLeavesOutOtherContainers: with the pod template's
// containers, the history of others is not used and the pod minimum is
// split among the template's containers that have history, as the
// recommender does once its pods run the template.
func TestRecommendLeavesOutOtherContainers(t *testing.T) {
	end := replayEnd.Add(-time.Hour)
	h := replaytest.Synthetic("shop", end, 10)
	pods := h.PodHistories()
	r, err := NewCommandOptions().Recommender()
	if err != nil {
		t.Fatal(err)
	}
	got := r.Recommend(&Workload{Pods: pods}, []string{"sidecar", "cache"})
	if len(got.Containers) != 1 || got.Containers[0].ContainerName != "sidecar" {
		t.Fatalf("recommended %+v, want sidecar only", got.Containers)
	}
	// The sidecar alone takes the whole pod minimum (250Mi); shared with
	// app, half of it.
	if mem := got.Containers[0].Target.Memory().Value(); mem < 250<<20 {
		t.Errorf("sidecar's memory target %d, want at least the whole pod minimum 250Mi", mem)
	}
	both := r.Recommend(&Workload{Pods: pods}, nil)
	for _, c := range both.Containers {
		if c.ContainerName == "sidecar" && c.Target.Memory().Value() >= 250<<20 {
			t.Errorf("sidecar beside app: memory target %v, want its share of the pod minimum", c.Target.Memory())
		}
	}
}
