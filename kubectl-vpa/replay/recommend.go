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
	"fmt"
	"io"
	"slices"
	"sort"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/model"
)

// RecommendationFile is the file the replay writes the recommendation after
// the history to, for a trace of one workload.
const RecommendationFile = "recommendation.json"

// RecommendationHeading starts the recommendation's part of the replay's
// table on stdout.
const RecommendationHeading = "recommendation after the history"

// Recommender gives the recommendation after a usage history: what the
// recommender's estimator recommends once the whole history is in the
// recommender's model, which is what a VPA's recommender writes right after
// reading the history of the VPA's pods from Prometheus
// (--storage=prometheus). `kubectl vpa export --prometheus-url` writes it
// as a patch.
type Recommender struct {
	// Model is the recommender's model configuration; the estimator runs
	// on estimator.ModelConfig of it, as in the recommender.
	Model     model.Config
	Estimator estimator.Estimator
}

// Recommender returns the recommender of the options' --estimator,
// estimator flags and model flags (the recommender's defaults unless
// changed).
func (o *CommandOptions) Recommender() (*Recommender, error) {
	e, err := estimator.New(o.Estimator, o.Estimators)
	if err != nil {
		return nil, err
	}
	return &Recommender{Model: o.Model, Estimator: e}, nil
}

// Recommend feeds w's history into a fresh model and returns the
// estimator's recommendation at its end, under no VPA policy. A history
// read from Prometheus (w.Pods) goes in pod by pod, each container of each
// pod through a container state of its own, every CPU point and then every
// memory point, as the recommender feeds the history it reads
// (recommender/cluster's FeedHistory); a trace file's containers go in as
// the containers of one pod. containers, when not nil, are the containers
// to recommend (a pod template's): the history of others is left out, as
// the recommender leaves out containers no pod runs any more, so that the
// pod minimum is split among these only. A container without history gets
// no recommendation.
func (r *Recommender) Recommend(w *Workload, containers []string) estimator.Result {
	cfg := estimator.ModelConfig(r.Estimator.Name(), r.Model)
	aggs := map[string]*model.AggregateState{}
	state := func(name string) *model.ContainerState {
		a := aggs[name]
		if a == nil {
			a = model.NewAggregateState(&cfg, w.End())
			aggs[name] = a
		}
		return model.NewContainerState(a)
	}
	wanted := func(name string) bool { return containers == nil || slices.Contains(containers, name) }
	if w.Pods != nil {
		for _, p := range w.Pods {
			names := make([]string, 0, len(p.Containers))
			for name := range p.Containers {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if !wanted(name) {
					continue
				}
				c, cs := p.Containers[name], state(name)
				for _, s := range c.CPU {
					cs.AddCPUSample(s.Time, s.Value)
				}
				for _, s := range c.Memory {
					cs.AddMemorySample(s.Time, s.Value)
				}
			}
		}
	} else {
		for _, c := range w.Containers {
			if !wanted(c.Name) {
				continue
			}
			cs := state(c.Name)
			for _, s := range c.Samples {
				cs.AddCPUSample(s.Time, model.CPUAmountFromCores(s.CPU))
			}
			for _, s := range c.Samples {
				cs.AddMemorySample(s.Time, model.MemoryAmountFromBytes(s.Memory))
			}
		}
	}
	return r.Estimator.Recommend(aggs, nil, nil)
}

// sortPods puts pods in name order and every container's points in time
// order (Prometheus answers in order; this guards against a server that
// does not), as the recommender's history provider does.
func sortPods(pods []*history.Pod) {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		for _, c := range p.Containers {
			for _, s := range [][]history.Sample{c.CPU, c.Memory} {
				sort.SliceStable(s, func(i, j int) bool { return s[i].Time.Before(s[j].Time) })
			}
		}
	}
}

// RecommendationReport is the content of recommendation.json: the
// recommendation after the replayed history of one workload.
type RecommendationReport struct {
	Workload  string `json:"workload"`
	Estimator string `json:"estimator"`
	// Pods is the number of pods whose histories went in, each as its own;
	// 0 for a trace file, whose containers went in as one pod's.
	Pods int `json:"pods"`
	// Containers are the recommendation as a VPA's status holds it.
	Containers []vpav1.RecommendedContainerResources `json:"containers"`
	// Confidence is how much history backs each container, in days
	// (estimator.Result.Confidence).
	Confidence map[string]float64 `json:"confidence"`
}

// Report returns the recommendation after w's history.
func (r *Recommender) Report(w *Workload) RecommendationReport {
	res := r.Recommend(w, nil)
	return RecommendationReport{Workload: w.Name, Estimator: r.Estimator.Name(), Pods: len(w.Pods), Containers: res.Containers, Confidence: res.Confidence}
}

// Print writes the recommendation as a table.
func (rr RecommendationReport) Print(w io.Writer) {
	how := "the trace's containers fed as one pod's"
	if rr.Pods > 0 {
		how = fmt.Sprintf("each of %d pods fed on its own, as the recommender reads history", rr.Pods)
	}
	fmt.Fprintf(w, "\n%s (%s estimator; %s):\n", RecommendationHeading, rr.Estimator, how)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "container\tcpu target\tmemory target\tcpu lower\tmemory lower\tcpu upper\tmemory upper\tconfidence (days)")
	q := func(l corev1.ResourceList, name corev1.ResourceName) string {
		v, ok := l[name]
		if !ok {
			return "-"
		}
		return v.String()
	}
	for _, c := range rr.Containers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\n", c.ContainerName,
			q(c.Target, corev1.ResourceCPU), q(c.Target, corev1.ResourceMemory),
			q(c.LowerBound, corev1.ResourceCPU), q(c.LowerBound, corev1.ResourceMemory),
			q(c.UpperBound, corev1.ResourceCPU), q(c.UpperBound, corev1.ResourceMemory), rr.Confidence[c.ContainerName])
	}
	tw.Flush()
}
