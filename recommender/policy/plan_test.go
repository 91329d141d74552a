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

package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
)

var (
	deployment = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	cronJob    = schema.GroupKind{Group: "batch", Kind: "CronJob"}
	t0         = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

func mode(m vpav1.UpdateMode) *vpav1.UpdateMode { return &m }

func testPolicy(name string, priority int32, created time.Time, m vpav1.UpdateMode, nsLabels, wlLabels map[string]string) *Source {
	p := &policyv1alpha1.VerticalPodAutoscalerPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(created)},
		Spec: policyv1alpha1.VerticalPodAutoscalerPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: nsLabels},
			Priority:          priority,
			Template:          policyv1alpha1.VerticalPodAutoscalerTemplate{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: mode(m)}},
		},
	}
	if wlLabels != nil {
		p.Spec.Selector = &metav1.LabelSelector{MatchLabels: wlLabels}
	}
	s, err := Compile(p)
	if err != nil {
		panic(err)
	}
	return s
}

func wl(gk schema.GroupKind, name string, lbls map[string]string) *Workload {
	return &Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), Labels: lbls},
		GroupKind: gk, APIVersion: gk.Group + "/v1"}
}

func userVPA(name, kind, target string) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec:       vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target}},
	}
}

// managedVPA is what the plan would create for w from s.
func managedVPA(w *Workload, s *Source) *vpav1.VerticalPodAutoscaler {
	v := desired("shop", ManagedName(w.GroupKind.Kind, w.Name), w, s)
	v.ResourceVersion = "7"
	return v
}

func names(vs []*vpav1.VerticalPodAutoscaler) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name+":"+v.Labels[policyv1alpha1.LabelPolicy]+":"+string(*v.Spec.UpdatePolicy.UpdateMode))
	}
	slices.Sort(out)
	return out
}

func TestPlanNamespace(t *testing.T) {
	team := map[string]string{"team": "a"}
	off := testPolicy("off", 0, t0, vpav1.UpdateModeOff, nil, nil)
	offLater := testPolicy("off-later", 0, t0.Add(time.Hour), vpav1.UpdateModeInitial, nil, nil)
	high := testPolicy("high", 10, t0.Add(time.Hour), vpav1.UpdateModeRecreate, nil, nil)
	teamOnly := testPolicy("team-a", 0, t0, vpav1.UpdateModeInitial, team, nil)
	webOnly := testPolicy("web-only", 0, t0, vpav1.UpdateModeInitial, nil, map[string]string{"app": "web"})
	web := wl(deployment, "web", map[string]string{"app": "web"})
	job := wl(cronJob, "nightly", nil)
	owned := wl(deployment, "owned", nil)
	owned.Owned = true

	for _, tc := range []struct {
		name      string
		nsLabels  map[string]string
		sources   []*Source
		workloads []*Workload
		vpas      []*vpav1.VerticalPodAutoscaler
		unwatched map[schema.GroupKind]bool
		creates   []string
		updates   []string
		deletes   []string
		displaced int
		counts    map[string]Counts
	}{{
		name:      "a VPA for each selected workload, none for an owned one",
		sources:   []*Source{off},
		workloads: []*Workload{web, job, owned},
		creates:   []string{"cronjob-nightly:off:Off", "deployment-web:off:Off"},
		counts:    map[string]Counts{"off": {Selected: 2, Managed: 2}},
	}, {
		name:      "nothing to write when the VPAs are as planned",
		sources:   []*Source{off},
		workloads: []*Workload{web},
		vpas:      []*vpav1.VerticalPodAutoscaler{managedVPA(web, off)},
		counts:    map[string]Counts{"off": {Selected: 1, Managed: 1}},
	}, {
		name:      "a changed policy updates its VPA",
		sources:   []*Source{high},
		workloads: []*Workload{web},
		vpas:      []*vpav1.VerticalPodAutoscaler{managedVPA(web, off)},
		updates:   []string{"deployment-web:high:Recreate"},
		counts:    map[string]Counts{"high": {Selected: 1, Managed: 1}},
	}, {
		name:      "a user's VPA displaces the managed one",
		sources:   []*Source{off},
		workloads: []*Workload{web},
		vpas:      []*vpav1.VerticalPodAutoscaler{managedVPA(web, off), userVPA("mine", "Deployment", "web")},
		deletes:   []string{"deployment-web:off:Off"},
		displaced: 1,
		counts:    map[string]Counts{"off": {Selected: 1}},
	}, {
		name:      "a user's VPA of another kind does not",
		sources:   []*Source{off},
		workloads: []*Workload{web},
		vpas:      []*vpav1.VerticalPodAutoscaler{userVPA("mine", "StatefulSet", "web")},
		creates:   []string{"deployment-web:off:Off"},
		counts:    map[string]Counts{"off": {Selected: 1, Managed: 1}},
	}, {
		name:    "a workload gone loses its VPA",
		sources: []*Source{off},
		vpas:    []*vpav1.VerticalPodAutoscaler{managedVPA(web, off)},
		deletes: []string{"deployment-web:off:Off"},
	}, {
		name:      "an unwatched kind keeps its VPAs",
		sources:   []*Source{off},
		vpas:      []*vpav1.VerticalPodAutoscaler{managedVPA(web, off)},
		unwatched: map[schema.GroupKind]bool{deployment: true},
	}, {
		name:      "the namespace selector",
		sources:   []*Source{teamOnly},
		workloads: []*Workload{web},
	}, {
		name:      "the namespace selector, matching",
		nsLabels:  team,
		sources:   []*Source{teamOnly},
		workloads: []*Workload{web},
		creates:   []string{"deployment-web:team-a:Initial"},
		counts:    map[string]Counts{"team-a": {Selected: 1, Managed: 1}},
	}, {
		name:      "the workload selector",
		sources:   []*Source{webOnly},
		workloads: []*Workload{web, job},
		creates:   []string{"deployment-web:web-only:Initial"},
		counts:    map[string]Counts{"web-only": {Selected: 1, Managed: 1}},
	}, {
		name:      "the higher priority wins, and both show the conflict",
		sources:   []*Source{off, high},
		workloads: []*Workload{web},
		creates:   []string{"deployment-web:high:Recreate"},
		counts: map[string]Counts{
			"high": {Selected: 1, Managed: 1, Conflicts: []string{"shop/Deployment/web (also policy off)"}},
			"off":  {Selected: 1, Conflicts: []string{"shop/Deployment/web (also policy high)"}},
		},
	}, {
		name:      "at equal priority the older policy wins",
		sources:   []*Source{offLater, off},
		workloads: []*Workload{web},
		creates:   []string{"deployment-web:off:Off"},
		counts: map[string]Counts{
			"off":       {Selected: 1, Managed: 1, Conflicts: []string{"shop/Deployment/web (also policy off-later)"}},
			"off-later": {Selected: 1, Conflicts: []string{"shop/Deployment/web (also policy off)"}},
		},
	}, {
		name:      "the namespace label alone",
		nsLabels:  map[string]string{policyv1alpha1.LabelNamespaceUpdateMode: "InPlaceOrRecreate"},
		workloads: []*Workload{web, job},
		creates:   []string{"cronjob-nightly::InPlaceOrRecreate", "deployment-web::InPlaceOrRecreate"},
	}, {
		name:      "the namespace label wins over a policy",
		nsLabels:  map[string]string{policyv1alpha1.LabelNamespaceUpdateMode: "Initial"},
		sources:   []*Source{high},
		workloads: []*Workload{web},
		vpas:      []*vpav1.VerticalPodAutoscaler{managedVPA(web, high)},
		updates:   []string{"deployment-web::Initial"},
		counts:    map[string]Counts{"high": {Selected: 1, Conflicts: []string{"shop/Deployment/web (also namespace label openvpa.io/vpa-update-mode)"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := PlanNamespace(Input{Namespace: "shop", NamespaceLabels: tc.nsLabels, Sources: tc.sources,
				Workloads: tc.workloads, VPAs: tc.vpas, Unwatched: tc.unwatched})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"creates", names(plan.Creates), tc.creates}, {"updates", names(plan.Updates), tc.updates}, {"deletes", names(plan.Deletes), tc.deletes}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s %q, want %q", c.what, c.got, c.want)
				}
			}
			if len(plan.Displaced) != tc.displaced {
				t.Errorf("%d displaced, want %d", len(plan.Displaced), tc.displaced)
			}
			if len(plan.Policies) != len(tc.counts) {
				t.Errorf("counts of %d policies, want %d", len(plan.Policies), len(tc.counts))
			}
			for p, want := range tc.counts {
				got := plan.Policies[p]
				if got == nil || got.Selected != want.Selected || got.Managed != want.Managed || !slices.Equal(got.Conflicts, want.Conflicts) {
					t.Errorf("policy %s: %+v, want %+v", p, got, want)
				}
			}
		})
	}
}

func TestPlanOwnsAndTargets(t *testing.T) {
	s := testPolicy("off", 0, t0, vpav1.UpdateModeOff, nil, nil)
	w := wl(deployment, "web", nil)
	plan, _ := PlanNamespace(Input{Namespace: "shop", Sources: []*Source{s}, Workloads: []*Workload{w}})
	if len(plan.Creates) != 1 {
		t.Fatalf("creates %d, want 1", len(plan.Creates))
	}
	v := plan.Creates[0]
	if ref := v.Spec.TargetRef; ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != "web" {
		t.Errorf("targetRef %+v", ref)
	}
	if len(v.OwnerReferences) != 1 || v.OwnerReferences[0].UID != w.UID || v.OwnerReferences[0].Controller != nil {
		t.Errorf("owners %+v: want the workload, not as controller", v.OwnerReferences)
	}
	if v.Labels[policyv1alpha1.LabelManagedBy] != policyv1alpha1.ManagedByPolicyController {
		t.Errorf("labels %v", v.Labels)
	}
	// A user's label on the managed VPA survives an update.
	have := managedVPA(w, s)
	have.Labels["mine"] = "kept"
	upd := update(have, desired("shop", have.Name, w, testPolicy("other", 0, t0, vpav1.UpdateModeInitial, nil, nil)))
	if upd == nil || upd.Labels["mine"] != "kept" || upd.Labels[policyv1alpha1.LabelPolicy] != "other" || upd.ResourceVersion != "7" {
		t.Errorf("update %+v", upd)
	}
}

func TestNamespaceLabelInvalid(t *testing.T) {
	plan, err := PlanNamespace(Input{Namespace: "shop", NamespaceLabels: map[string]string{policyv1alpha1.LabelNamespaceUpdateMode: "Sometimes"},
		Workloads: []*Workload{wl(deployment, "web", nil)}})
	if err == nil || !strings.Contains(err.Error(), "Sometimes") {
		t.Errorf("err %v, want one naming the value", err)
	}
	if len(plan.Creates)+len(plan.Updates)+len(plan.Deletes) != 0 {
		t.Errorf("plan %+v, want nothing", plan)
	}
}

func TestManagedName(t *testing.T) {
	if got := ManagedName("Deployment", "web"); got != "deployment-web" {
		t.Errorf("got %s", got)
	}
	long := strings.Repeat("a", 260)
	a, b := ManagedName("Deployment", long), ManagedName("Deployment", long+"b")
	if len(a) > maxName || len(b) > maxName || a == b {
		t.Errorf("long names %d %d, equal %v", len(a), len(b), a == b)
	}
}

func TestWorkloadTransformIsIdempotent(t *testing.T) {
	yes := true
	tr := workloadTransform(deployment, "apps/v1")
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "shop",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", Controller: &yes}}}}
	once, _ := tr(obj)
	twice, _ := tr(once)
	w, ok := twice.(*Workload)
	if !ok || !w.Owned || w.Name != "rs" {
		t.Errorf("transform twice gave %+v: a watch-list start transforms each object twice, and must keep the owner", twice)
	}
}
