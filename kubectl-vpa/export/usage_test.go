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

package export

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/openvpa/openvpa/kubectl-vpa/replay"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/model"
)

// usageHistory is three days of hourly points of two pods, one after the
// other, for each of containers: cpu millicores and memory MiB that follow
// the hour of the day.
func usageHistory(end time.Time, containers map[string][2]int64) *replay.Workload {
	w := &replay.Workload{Name: "deployment/web"}
	start := end.Add(-72 * time.Hour)
	for i, name := range []string{"web-5d8f7c9b4-x2k9q", "web-6b9c8d7f5-m4n2p"} {
		p := &history.Pod{Name: name, Containers: map[string]*history.Container{}}
		from, to := start.Add(time.Duration(i)*36*time.Hour), start.Add(time.Duration(i+1)*36*time.Hour)
		for c, base := range containers {
			hc := &history.Container{}
			for t := from.Add(time.Hour); !t.After(to); t = t.Add(time.Hour) {
				h := int64(t.Hour())
				hc.CPU = append(hc.CPU, history.Sample{Time: t, Value: model.ResourceAmount(base[0] + 10*h)})
				hc.Memory = append(hc.Memory, history.Sample{Time: t, Value: model.ResourceAmount((base[1] + 4*h) << 20)})
			}
			p.Containers[c] = hc
		}
		w.Pods = append(w.Pods, p)
	}
	return w
}

func defaultRecommender(t *testing.T) *replay.Recommender {
	t.Helper()
	r, err := replay.NewCommandOptions().Recommender()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestComputeFromUsage: a workload without a VPA gets the recommendation
// after its history, for the pod template's containers that have history,
// through the same planning and rendering as a VPA's (limits in
// proportion), with warnings for what is left out.
func TestComputeFromUsage(t *testing.T) {
	ix := fixture(t)
	end := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	// web's template has proxy and app; the history has app and a
	// container the template no longer has.
	web := usageHistory(end, map[string][2]int64{"app": {200, 300}, "old": {50, 100}})
	usages := []Usage{
		{Kind: "Deployment", Namespace: "shop", Name: "web", History: web, Source: "usage history in Prometheus",
			Notes: []string{"no VerticalPodAutoscaler: the recommender's percentile estimator after the history"}},
		{Kind: "Deployment", Namespace: "shop", Name: "gone", History: web},
		// nightly's only container, batch, has no history.
		{Kind: "CronJob", Namespace: "shop", Name: "nightly", History: web},
	}
	rec := defaultRecommender(t)
	r := ComputeFromUsage(ix, usages, rec, DefaultOptions())
	wantWarnings := []string{
		"Deployment shop/web: container proxy has no usage history; left out",
		"Deployment shop/web: the usage history of container old, which the pod template does not have, is not used",
		"Deployment shop/gone: not found; skipped",
		"CronJob shop/nightly: container batch has no usage history; left out",
		"CronJob shop/nightly: the usage history of container app, which the pod template does not have, is not used",
		"CronJob shop/nightly: the usage history of container old, which the pod template does not have, is not used",
		"CronJob shop/nightly: none of the pod template's containers (batch) has usage history; skipped",
	}
	if strings.Join(r.Warnings, "\n") != strings.Join(wantWarnings, "\n") {
		t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(r.Warnings, "\n"), strings.Join(wantWarnings, "\n"))
	}
	if len(r.Patches) != 1 || len(r.Patches[0].Containers) != 1 || r.Patches[0].Containers[0].Name != "app" {
		t.Fatalf("patches %+v, want web's for app", r.Patches)
	}
	// The pod minimum is app's alone: the recommendation for the template's
	// containers, not for the history's.
	want := rec.Recommend(web, []string{"proxy", "app"}).Containers
	if len(want) != 1 {
		t.Fatalf("the recommender recommends %+v, want app alone", want)
	}
	c := r.Patches[0].Containers[0]
	if !sameList(c.Requests, want[0].Target) {
		t.Errorf("app's requests %v, want the target after the history %v", c.Requests, want[0].Target)
	}
	// app's limits are twice its requests in the template.
	for name, q := range c.Requests {
		lim := c.Limits[name]
		if lim.MilliValue() != 2*q.MilliValue() {
			t.Errorf("app's %s limit %v, want twice the request %v", name, &lim, &q)
		}
	}

	// The patches apply as a VPA's do, and say where they come from.
	for _, format := range []string{FormatStrategic, FormatJSON6902} {
		o := DefaultOptions()
		o.Format = format
		r := ComputeFromUsage(ix, usages[:1], rec, o)
		var b bytes.Buffer
		if err := WriteStream(&b, r.Patches, WriteOptions{Format: format, Value: o.Value}); err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("testdata", "usage-"+format+".yaml"), b.Bytes())
		d := &appsv1.Deployment{}
		apply(t, strings.Split(manifests, "---\n")[0], d, r.Patches, format)
		cs := d.Spec.Template.Spec.Containers
		check(t, format+" web/app", cs[1], "app", corev1.ResourceRequirements{Requests: c.Requests, Limits: c.Limits})
		check(t, format+" web/proxy", cs[0], "proxy", corev1.ResourceRequirements{Requests: cs[0].Resources.Requests})
		if cs[0].Resources.Requests.Cpu().String() != "50m" {
			t.Errorf("%s: proxy's requests changed: %v", format, cs[0].Resources.Requests)
		}
	}

	// --value and --containers apply as to a VPA's recommendation.
	o := DefaultOptions()
	o.Value, o.Containers = ValueLowerBound, []string{"proxy"}
	if r := ComputeFromUsage(ix, usages[:1], rec, o); len(r.Patches) != 0 || !strings.Contains(strings.Join(r.Warnings, "\n"), "no recommended container among --containers proxy; skipped") {
		t.Errorf("--containers proxy: %+v", r)
	}
	o.Containers = nil
	lower := ComputeFromUsage(ix, usages[:1], rec, o)
	if len(lower.Patches) != 1 || !sameList(lower.Patches[0].Containers[0].Requests, want[0].LowerBound) {
		t.Errorf("--value lowerBound: %+v, want requests %v", lower.Patches, want[0].LowerBound)
	}
}
