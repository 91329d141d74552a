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

package app

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/recommender/model"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func rl(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func deployment(name string, replicas int32) (*appsv1.Deployment, *appsv1.ReplicaSet) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: sel,
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel.MatchLabels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}}}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-5d9f", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: name, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: sel},
	}
	return d, rs
}

func pod(app, name string, requests corev1.ResourceList, age time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": app}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-5d9f", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr.To(metav1.NewTime(now.Add(-age))),
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}}},
	}
}

func vpa(name, deployment string, mode vpav1.UpdateMode, created time.Time) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}
}

// oomKill is an OOM kill of a container running with a memory request.
type oomKill struct {
	ago     time.Duration
	request string
}

// historyCheckpoint is the checkpoint of days of one sample a minute at
// cpu cores and mem bytes, then the OOM kills, as the recommender's model
// writes it when the last memory window closes.
func historyCheckpoint(t *testing.T, vpaName string, days int, cpu, mem float64, kills ...oomKill) *vpav1.VerticalPodAutoscalerCheckpoint {
	t.Helper()
	start := now.Add(-time.Duration(days) * 24 * time.Hour)
	a := model.NewAggregateState(model.DefaultConfig(), start)
	cs := model.NewContainerState(a)
	i := 0
	for ts := start; ts.Before(now); ts = ts.Add(time.Minute) {
		c := cpu
		if i%10 == 0 {
			c *= 2 // every tenth minute busier: a P90 above the median
		}
		cs.AddCPUSample(ts, model.CPUAmountFromCores(c))
		cs.AddMemorySample(ts, model.MemoryAmountFromBytes(mem))
		i++
	}
	for _, k := range kills {
		q := resource.MustParse(k.request)
		if err := cs.RecordOOM(now.Add(-k.ago), model.ResourceAmount(q.Value())); err != nil {
			t.Fatal(err)
		}
	}
	st, err := model.SaveCheckpoint(a, []*model.ContainerState{cs}, now)
	if err != nil {
		t.Fatal(err)
	}
	return &vpav1.VerticalPodAutoscalerCheckpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: vpaName + "-app"},
		Spec:       vpav1.VerticalPodAutoscalerCheckpointSpec{VPAObjectName: vpaName, ContainerName: "app"},
		Status:     st,
	}
}

// fixture is a namespace with:
//   - web: a Recreate VPA whose memory target is clipped by maxAllowed,
//     two pods below the cpu lower bound (one OOM-killed), a PDB that
//     allows no disruption, three days of checkpointed history;
//   - api: an Off VPA made by policy right-size, whose pod requests far more than it uses, with an
//     HPA on cpu, ten days of checkpointed history ending in two OOM kills
//     (at requests of 256Mi and 384Mi) and the recommendation the adaptive
//     estimator writes from it;
//   - twin-a and twin-b: two VPAs on one Deployment;
//   - a LimitRange capping containers at 500m cpu, which web's proportional
//     limit would pass.
func fixture(t *testing.T) *snapshot.Index {
	t.Helper()
	return index(t, fixtureSnapshot(t))
}

func index(t *testing.T, s *snapshot.Snapshot) *snapshot.Index {
	t.Helper()
	ix, err := snapshot.NewIndex(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func fixtureSnapshot(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s := &snapshot.Snapshot{Now: now}
	for _, d := range []struct {
		name     string
		replicas int32
		tier     string
		// the template's container: requests and limits
		requests, limits corev1.ResourceList
	}{
		{"web", 2, "frontend", rl("100m", "128Mi"), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}},
		// a sidecar first: the JSON patch addresses app by index 1. The
		// namespace's LimitRange has a max and no default, so every
		// container sets a cpu limit.
		{"api", 1, "backend", rl("200m", "4Gi"), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m")}},
		{"twin", 1, "frontend", rl("100m", "256Mi"), nil},
	} {
		dep, rs := deployment(d.name, d.replicas)
		dep.Labels = map[string]string{"tier": d.tier}
		dep.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: d.requests, Limits: d.limits}
		if d.name == "api" {
			proxy := corev1.Container{Name: "proxy", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}
			dep.Spec.Template.Spec.Containers = append([]corev1.Container{proxy}, dep.Spec.Template.Spec.Containers...)
		}
		s.Workloads = append(s.Workloads, []runtime.Object{dep, rs}...)
	}

	web := vpa("web", "web", vpav1.UpdateModeRecreate, now.Add(-72*time.Hour))
	web.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{
		ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("200Mi")}}}}
	web.Status = vpav1.VerticalPodAutoscalerStatus{
		Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{
			ContainerName: "app", Target: rl("404m", "200Mi"), LowerBound: rl("230m", "200Mi"), UpperBound: rl("480m", "200Mi"), UncappedTarget: rl("404m", "366Mi"),
		}}},
		Conditions: []vpav1.VerticalPodAutoscalerCondition{
			{Type: vpav1.RecommendationProvided, Status: corev1.ConditionTrue},
			// What the recommender writes when the largest node caps the
			// target and the quota caps the increase.
			{Type: vpav1.RecommendationCappedToNode, Status: corev1.ConditionTrue, Reason: "LargestEligibleNode",
				Message: "The target is capped to fit node kwok-m, the largest the pods may be scheduled on (allocatable cpu 2, memory 4Gi; cpu 1800m, memory 3Gi left by its DaemonSet pods): uncapped target container app cpu 404m, memory 366Mi"},
			{Type: vpav1.ResourceQuotaConflict, Status: corev1.ConditionTrue, Reason: "QuotaCapsIncrease",
				Message: "Pods get the increase of cpu capped: the namespace's ResourceQuota team leaves too little room for the recommendation (room is kept for 1 more pod(s) with their own requests)"},
		},
	}
	api := vpa("api", "api", vpav1.UpdateModeOff, now.Add(-10*24*time.Hour))
	// What the recommender running --estimator=adaptive writes from api's
	// checkpoint.
	api.Status = vpav1.VerticalPodAutoscalerStatus{
		Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{
			ContainerName: "app", Target: rl("49m", "1022269075"), LowerBound: rl("25m", "511134537"), UpperBound: rl("53m", "2044538150"), UncappedTarget: rl("49m", "1022269075"),
		}}},
		Conditions: []vpav1.VerticalPodAutoscalerCondition{
			{Type: vpav1.RecommendationProvided, Status: corev1.ConditionTrue},
			{Type: vpav1.HPAConflict, Status: corev1.ConditionTrue, Reason: "HPAOnSameResource", Message: "HorizontalPodAutoscaler api on cpu scales Deployment/api on a resource this VPA also sets"},
		},
	}
	twinA := vpa("twin-a", "twin", vpav1.UpdateModeInitial, now.Add(-2*time.Hour))
	twinB := vpa("twin-b", "twin", vpav1.UpdateModeInitial, now.Add(-time.Hour))
	twinB.Annotations = map[string]string{hpa.ModeAnnotation: hpa.ModeScalePoint}
	web.Labels = map[string]string{"team": "storefront"}
	api.Labels = map[string]string{"team": "platform",
		policyv1alpha1.LabelManagedBy: policyv1alpha1.ManagedByPolicyController, policyv1alpha1.LabelPolicy: "right-size"}
	twinA.Labels = map[string]string{"team": "storefront"}
	s.VPAs = []*vpav1.VerticalPodAutoscaler{web, api, twinA, twinB}

	webA := pod("web", "web-5d9f-a", rl("100m", "128Mi"), 30*time.Hour)
	webA.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	oom := pod("web", "web-5d9f-b", rl("100m", "128Mi"), 30*time.Hour)
	oom.Spec.Containers[0].Resources.Limits = webA.Spec.Containers[0].Resources.Limits
	oom.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled",
		StartedAt: metav1.NewTime(now.Add(-3 * time.Hour)), FinishedAt: metav1.NewTime(now.Add(-3*time.Hour + 90*time.Second))}
	s.Pods = []*corev1.Pod{
		webA, oom,
		pod("api", "api-5d9f-a", rl("2", "4Gi"), 20*time.Hour),
		pod("twin", "twin-5d9f-a", rl("100m", "256Mi"), time.Hour),
	}
	s.Checkpoints = []*vpav1.VerticalPodAutoscalerCheckpoint{
		historyCheckpoint(t, "web", 3, 0.3, 300*1024*1024),
		historyCheckpoint(t, "api", 10, 0.02, 180*1024*1024, oomKill{ago: 23 * time.Hour, request: "256Mi"}, oomKill{ago: 21 * time.Hour, request: "384Mi"}),
	}
	s.HPAs = []*autoscalingv2.HorizontalPodAutoscaler{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}, MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}},
		},
	}, {
		// twin's HPA on cpu utilization: twin-a leaves cpu to it; twin-b
		// (in scale-point mode) keeps its scale point, which the updater
		// recorded.
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "twin", Annotations: map[string]string{hpa.ScalePointAnnotation: (&hpa.Record{VPA: "twin-b",
			Metrics: []hpa.RecordedMetric{{Resource: corev1.ResourceCPU, Original: 60, Request: resource.MustParse("100m"), Set: 30}}}).Encode()}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "twin"}, MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(30))}}}},
		},
	}}
	s.LimitRanges = []*corev1.LimitRange{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "max"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
	}}
	s.PDBs = []*policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}}
	return s
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it); got:\n%s", path, got)
	}
}

func TestGoldenOutputs(t *testing.T) {
	ix := fixture(t)
	tests := map[string]struct {
		cmd, name, file string
		// args are the command's flags, parsed by its flag set.
		args []string
	}{
		"explain web as a table":    {cmd: "explain", name: "web", file: "explain-web.txt"},
		"explain web as JSON":       {cmd: "explain", name: "web", args: []string{"-o", "json"}, file: "explain-web.json"},
		"explain api as a table":    {cmd: "explain", name: "api", file: "explain-api.txt"},
		"explain twin-a as a table": {cmd: "explain", name: "twin-a", file: "explain-twin-a.txt"},
		"explain twin-b as a table": {cmd: "explain", name: "twin-b", file: "explain-twin-b.txt"},
		"explain web by the peak estimator": {cmd: "explain", name: "web", args: []string{"--estimator=peak", "--peak-memory-margin=0.2"},
			file: "explain-web-peak.txt"},
		"explain web with the recommender's rounding": {cmd: "explain", name: "web", args: []string{"--round-cpu-millicores=100", "--round-memory-bytes=67108864"},
			file: "explain-web-rounded.txt"},
		"explain api by the adaptive estimator": {cmd: "explain", name: "api", args: []string{"--estimator=adaptive"}, file: "explain-api-adaptive.txt"},
		"explain api by the adaptive estimator as JSON": {cmd: "explain", name: "api", args: []string{"--estimator=adaptive", "-o", "json"},
			file: "explain-api-adaptive.json"},
		"report as a table": {cmd: "report", file: "report.txt"},
		"report as JSON":    {cmd: "report", args: []string{"-o", "json"}, file: "report.json"},
		"report as HTML":    {cmd: "report", args: []string{"-o", "html", "--out", "unused"}, file: "report.html"},
		"report as CSV":     {cmd: "report", args: []string{"-o", "csv"}, file: "report.csv"},
		"report -l as CSV":  {cmd: "report", args: []string{"-o", "csv", "-l", "team=storefront"}, file: "report-team-storefront.csv"},
		"report --target-selector as CSV": {cmd: "report", args: []string{"-o", "csv", "--target-selector", "tier=backend"},
			file: "report-tier-backend.csv"},
		"explain -l as a table": {cmd: "explain", args: []string{"-l", "team in (platform)"}, file: "explain-l-team-platform.txt"},
		"export strategic":      {cmd: "export", file: "export-strategic.yaml"},
		"export json6902":       {cmd: "export", args: []string{"--format=json6902"}, file: "export-json6902.yaml"},
		"export web's lower bound": {cmd: "export", name: "web", args: []string{"--value=lowerBound"},
			file: "export-web-lowerbound.yaml"},
		"export web's uncapped target": {cmd: "export", name: "web", args: []string{"--value=uncappedTarget"},
			file: "export-web-uncapped.yaml"},
		"export -l, only container app": {cmd: "export", args: []string{"-l", "team=platform", "--containers=app,other"},
			file: "export-l-team-platform.yaml"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			if err := flagSet(o, tc.cmd).Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Validate(tc.cmd); err != nil {
				t.Fatal(err)
			}
			var out, stderr bytes.Buffer
			var err error
			switch {
			case tc.cmd == "explain" && tc.name == "":
				err = writeExplainSelected(ix, o, &out, &stderr)
			case tc.cmd == "explain":
				err = writeExplain(ix, o, "shop", tc.name, &out)
			case tc.cmd == "export":
				var names []string
				if tc.name != "" {
					names = []string{tc.name}
				}
				err = runExport(context.Background(), ix, o, "shop", names, &out, &stderr)
			default:
				err = writeReport(ix, o, "shop", &out, &stderr)
			}
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, out.Bytes())
			if tc.cmd == "export" || stderr.Len() > 0 {
				// What a user sees on the terminal: skipped VPAs, warnings.
				golden(t, tc.file+".stderr", stderr.Bytes())
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		cmd     string
		args    []string
		wantErr string
	}{
		"explain table":          {cmd: "explain"},
		"explain html refused":   {cmd: "explain", args: []string{"-o", "html"}, wantErr: `unsupported output format "html" for explain`},
		"report html needs out":  {cmd: "report", args: []string{"-o", "html"}, wantErr: "-o html needs --out FILE"},
		"-n with -A":             {cmd: "report", args: []string{"-n", "x", "-A"}, wantErr: "-n and -A cannot be used together"},
		"bad max cpu":            {cmd: "explain", args: []string{"--container-recommendation-max-allowed-cpu=lots"}, wantErr: "--container-recommendation-max-allowed-cpu"},
		"min replicas":           {cmd: "explain", args: []string{"--min-replicas=0"}, wantErr: "--min-replicas must be at least 1"},
		"explain adaptive":       {cmd: "explain", args: []string{"--estimator=adaptive", "--adaptive-memory-margins=0,0.2", "--memory-histogram-decay-half-life=48h"}},
		"unknown estimator":      {cmd: "explain", args: []string{"--estimator=magic"}, wantErr: `--estimator: unknown estimator "magic"`},
		"bad estimator setting":  {cmd: "explain", args: []string{"--estimator=peak", "--peak-memory-upper-bound-factor=0.5"}, wantErr: "peak memory upper bound factor"},
		"bad model setting":      {cmd: "explain", args: []string{"--oom-bump-up-ratio=0.5"}, wantErr: "oom bump-up ratio must be >= 1"},
		"report csv":             {cmd: "report", args: []string{"-o", "csv", "-l", "team in (a,b),!legacy", "--target-selector", "tier=web"}},
		"csv only for report":    {cmd: "explain", args: []string{"-o", "csv"}, wantErr: `unsupported output format "csv" for explain`},
		"bad selector":           {cmd: "report", args: []string{"-l", "team in a"}, wantErr: `-l "team in a"`},
		"bad target selector":    {cmd: "export", args: []string{"--target-selector", "=x"}, wantErr: "--target-selector"},
		"kubectl's bare seconds": {cmd: "report", args: []string{"--request-timeout=5"}},
		"no timeout":             {cmd: "report", args: []string{"--request-timeout=0"}},
		"bad timeout":            {cmd: "report", args: []string{"--request-timeout=soon"}, wantErr: `--request-timeout "soon"`},
		"impersonation":          {cmd: "export", args: []string{"--as=jane", "--as-group=dev", "--as-group=ops", "--cluster=c", "--user=u"}},
		"export format":          {cmd: "export", args: []string{"--format=kustomize"}, wantErr: `--format "kustomize"`},
		"export value":           {cmd: "export", args: []string{"--value=p95"}, wantErr: `--value "p95"`},
		"export from Prometheus": {cmd: "export", args: []string{"--prometheus-url=http://prometheus:9090", "--all-workloads", "--history-length=14d", "--max-samples=0"}},
		"all workloads need Prometheus": {cmd: "export", args: []string{"--all-workloads"},
			wantErr: "--all-workloads exports workloads without a VPA from their usage history: give --prometheus-url"},
		"all workloads of one namespace": {cmd: "export", args: []string{"--prometheus-url=http://prometheus:9090", "--all-workloads", "-A"},
			wantErr: "give one namespace (-n), not -A"},
		"bad Prometheus URL":   {cmd: "export", args: []string{"--prometheus-url=prometheus:9090"}, wantErr: "--prometheus-url must be an http or https URL"},
		"bad history length":   {cmd: "export", args: []string{"--prometheus-url=http://prometheus:9090", "--history-length=long"}, wantErr: "--history-length"},
		"negative max samples": {cmd: "export", args: []string{"--prometheus-url=http://prometheus:9090", "--max-samples=-1"}, wantErr: "--max-samples must be >= 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			fs := flagSet(o, tc.cmd)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate(tc.cmd)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestMainErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := Main(context.Background(), []string{"frobnicate"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %v", err)
	}
	if err := Main(context.Background(), []string{"--help"}, &out, &errOut); err != nil || !strings.Contains(out.String(), "kubectl vpa explain (NAME | -l SELECTOR)") || !strings.Contains(out.String(), "kubectl vpa export [NAME | KIND/NAME ...]") {
		t.Errorf("--help: %v, %q", err, out.String())
	}
	kc := filepath.Join(t.TempDir(), "missing")
	if err := Main(context.Background(), []string{"explain", "x", "--kubeconfig=" + kc}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("missing kubeconfig: %v", err)
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"explain"}, "explain needs a VPA name, or -l SELECTOR"},
		{[]string{"explain", "web", "-l", "a=b"}, "a VPA name or -l (and -A), not both"},
		{[]string{"explain", "a", "b"}, "explain takes one VPA name"},
		{[]string{"report", "web"}, "report takes no arguments"},
		{[]string{"export", "web", "-A"}, "names and -A cannot be used together"},
		{[]string{"export", "deployment/web", "--all-workloads", "--prometheus-url=http://prometheus:9090"}, "--all-workloads exports every workload of the namespace: give no names"},
		{[]string{"export", "rollout/web", "--kubeconfig=" + kc}, `unknown kind "rollout"`},
		{[]string{"export", "pod/web-1", "--kubeconfig=" + kc}, "export writes patches of a workload's pod template"},
		// Arguments are checked before the kubeconfig is read.
		{[]string{"export", "web", "-A", "--kubeconfig=" + kc}, "names and -A"},
		{[]string{"export", "--kubeconfig=" + kc}, "kubeconfig"},
	} {
		if err := Main(context.Background(), tc.args, &out, &errOut); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.wantErr)
		}
	}
	// replay reads a trace, not a cluster: it needs no kubeconfig.
	if err := Main(context.Background(), []string{"replay", "--kubeconfig=" + kc}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "unknown flag: --kubeconfig") {
		t.Errorf("replay with a kubectl flag: %v", err)
	}
	if err := Main(context.Background(), []string{"replay"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "--trace is required") {
		t.Errorf("replay without --trace: %v", err)
	}
	errOut.Reset()
	if err := Main(context.Background(), []string{"replay", "--help"}, &out, &errOut); err != nil || !strings.Contains(errOut.String(), "Usage: kubectl vpa replay --trace FILE") {
		t.Errorf("replay --help: %v, %q", err, errOut.String())
	}
}
