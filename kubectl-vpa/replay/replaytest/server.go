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

package replaytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/model"
)

// Prometheus answers the history queries from Histories as Prometheus's
// HTTP API does, for an httptest server: range queries (/api/v1/query_range)
// with the series of every history's pods that the query's pod_name=~
// matcher selects (Answer), and instant queries of the pod labels metric
// (/api/v1/query) with the label series of the pods running at the query's
// time, or of every pod for a last_over_time( query. A request it cannot
// read gets Prometheus's bad_data error.
type Prometheus struct {
	Histories []History

	mu      sync.Mutex
	queries []string
}

// Queries returns the queries asked so far, in order.
func (p *Prometheus) Queries() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.queries...)
}

func (p *Prometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fail := func(err error) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`, err.Error())
	}
	if err := r.ParseForm(); err != nil {
		fail(err)
		return
	}
	q := r.Form.Get("query")
	p.mu.Lock()
	p.queries = append(p.queries, q)
	p.mu.Unlock()
	unix := func(name string) (time.Time, error) {
		v, err := strconv.ParseFloat(r.Form.Get(name), 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s=%q: %w", name, r.Form.Get(name), err)
		}
		return time.Unix(int64(v), 0).UTC(), nil
	}
	metric := func(l map[string]string) string {
		b, _ := json.Marshal(l)
		return string(b)
	}
	switch r.URL.Path {
	case "/api/v1/query_range":
		start, err := unix("start")
		if err != nil {
			fail(err)
			return
		}
		end, err := unix("end")
		if err != nil {
			fail(err)
			return
		}
		var out []string
		for _, h := range p.Histories {
			series, err := h.Answer(q, start, end)
			if err != nil {
				fail(err)
				return
			}
			for _, s := range series {
				vals := make([]string, len(s.Times))
				for i := range s.Times {
					vals[i] = fmt.Sprintf(`[%d,"%s"]`, s.Times[i].Unix(), strconv.FormatFloat(s.Values[i], 'g', -1, 64))
				}
				out = append(out, fmt.Sprintf(`{"metric":%s,"values":[%s]}`, metric(s.Labels), strings.Join(vals, ",")))
			}
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[%s]}}`, strings.Join(out, ","))
	case "/api/v1/query":
		at, err := unix("time")
		if err != nil {
			fail(err)
			return
		}
		var series []map[string]string
		for _, h := range p.Histories {
			if !strings.HasPrefix(q, "last_over_time(") {
				series = append(series, h.LabelSeries(at)...)
				continue
			}
			// A range selector sees every pod of the history.
			seen := map[string]bool{}
			for _, pod := range h.Pods {
				for _, l := range h.LabelSeries(pod.To) {
					if n := l["kubernetes_pod_name"]; !seen[n] {
						seen[n] = true
						series = append(series, l)
					}
				}
			}
		}
		var out []string
		for _, l := range series {
			out = append(out, fmt.Sprintf(`{"metric":%s,"value":[%d,"1"]}`, metric(l), at.Unix()))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(out, ","))
	default:
		http.NotFound(w, r)
	}
}

// PodHistories returns the history of each pod of the workload as the
// recommender's history provider reads it from Prometheus: each
// container's CPU (millicores, as rate() gives it) and memory points at
// the steps the pod ran, sorted by pod name.
func (h History) PodHistories() []*history.Pod {
	var out []*history.Pod
	for _, p := range h.Pods {
		if !h.member(p) {
			continue
		}
		hp := &history.Pod{Name: p.Name, Containers: map[string]*history.Container{}}
		for _, c := range h.Containers {
			hc := &history.Container{}
			for _, t := range h.steps(p) {
				milli, bytes := h.Usage(p.Name, c, t)
				hc.CPU = append(hc.CPU, history.Sample{Time: t, Value: model.CPUAmountFromCores((float64(milli) + 0.5) / 1000)})
				hc.Memory = append(hc.Memory, history.Sample{Time: t, Value: model.MemoryAmountFromBytes(float64(bytes))})
			}
			hp.Containers[c] = hc
		}
		out = append(out, hp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
