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

package kubectlvpa

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/kubectl-vpa/report"
)

// pluginE runs bin/kubectl-vpa with the admin kubeconfig and returns its
// standard output and standard error apart.
func (e *env) pluginE(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := e.c.BuildBinary(t, "./kubectl-vpa")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig="+e.c.KubeconfigPath)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// setRecommendation writes the VPA's status as the recommender would.
func (e *env) setRecommendation(t *testing.T, name string, recs ...vpav1.RecommendedContainerResources) {
	t.Helper()
	v := e.getVPA(t, name)
	v.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: recs}
	v.Status.Conditions = []vpav1.VerticalPodAutoscalerCondition{{Type: vpav1.RecommendationProvided, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).UpdateStatus(context.Background(), v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestExportKustomize: kubectl vpa export --dir writes a Component that
// kubectl kustomize applies to the workload's manifest as kept in Git
// (without a namespace), and the rendered requests and limits are what
// the admission controller gives a new pod of the workload. -l picks the
// VPAs; one without a recommendation is skipped with a warning.
func TestExportKustomize(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := framework.Workload{Name: "web", Containers: []framework.Container{
		{Name: "sidecar", Requests: framework.Resources("10m", "32Mi")},
		{Name: "app", Requests: framework.Resources("100m", "128Mi"), Limits: framework.Resources("200m", "256Mi")},
	}}
	e.c.CreateDeployment(t, e.ns, w)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "other"})
	web := newVPA(e.ns, "web", "web", vpav1.UpdateModeInitial, nil)
	web.Labels = map[string]string{"team": "shop"}
	fresh := newVPA(e.ns, "fresh", "other", vpav1.UpdateModeOff, nil)
	fresh.Labels = map[string]string{"team": "shop"}
	unlabelled := newVPA(e.ns, "unlabelled", "other", vpav1.UpdateModeOff, nil)
	for _, v := range []*vpav1.VerticalPodAutoscaler{web, fresh, unlabelled} {
		e.createVPA(t, v)
	}
	e.setRecommendation(t, "web",
		vpav1.RecommendedContainerResources{ContainerName: "app", Target: framework.Resources("250m", "300Mi"),
			LowerBound: framework.Resources("200m", "256Mi"), UpperBound: framework.Resources("1", "1Gi"), UncappedTarget: framework.Resources("250m", "300Mi")},
		vpav1.RecommendedContainerResources{ContainerName: "sidecar", Target: framework.Resources("25m", "50Mi"),
			LowerBound: framework.Resources("25m", "50Mi"), UpperBound: framework.Resources("50m", "100Mi"), UncappedTarget: framework.Resources("25m", "50Mi")})
	e.setRecommendation(t, "unlabelled", vpav1.RecommendedContainerResources{ContainerName: "app", Target: framework.Resources("1", "1Gi")})

	root := t.TempDir()
	component := filepath.Join(root, "vpa")
	out, stderr, err := e.pluginE(t, "export", "-n", e.ns, "-l", "team=shop", "--dir", component)
	if err != nil {
		t.Fatalf("export: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "VerticalPodAutoscaler "+e.ns+"/fresh: no recommendation yet; skipped") {
		t.Errorf("export's standard error does not warn about fresh:\n%s", stderr)
	}
	files, err := os.ReadDir(component)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	// -l leaves unlabelled (targeting other) out.
	want := []string{"kustomization.yaml", e.ns + ".deployment.web.yaml"}
	sort.Strings(names)
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("export wrote %q, want %q", names, want)
	}

	// The workload as kept in Git: the Deployment without a namespace.
	d := w.Deployment(e.ns)
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	d.Namespace = ""
	manifest, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(root, "overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"web.yaml":           manifest,
		"kustomization.yaml": []byte("namespace: " + e.ns + "\nresources:\n- web.yaml\ncomponents:\n- ../vpa\n"),
	} {
		if err := os.WriteFile(filepath.Join(overlay, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rendered := e.c.Kubectl(t, "kustomize", overlay)
	var got appsv1.Deployment
	if err := yaml.Unmarshal([]byte(rendered), &got); err != nil {
		t.Fatalf("%v in\n%s", err, rendered)
	}

	// What the admission controller gives a new pod of the Deployment.
	e.runAdmission(t)
	var admitted *corev1.Pod
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		p, err := e.c.DryRunPod(e.ns, "web")
		if err != nil {
			return false, nil
		}
		admitted = p
		return p.Spec.Containers[1].Resources.Requests.Cpu().String() == "250m", nil
	})
	wantResources := map[string]corev1.ResourceRequirements{
		"sidecar": {Requests: framework.Resources("25m", "50Mi")},
		// Limits keep their ratio to the requests (2).
		"app": {Requests: framework.Resources("250m", "300Mi"), Limits: framework.Resources("500m", "600Mi")},
	}
	for i, c := range got.Spec.Template.Spec.Containers {
		a := admitted.Spec.Containers[i]
		if c.Name != a.Name || !sameResources(c.Resources, wantResources[c.Name]) || !sameResources(c.Resources, a.Resources) {
			t.Errorf("container %s: rendered %v, want %v as admitted %v", c.Name, c.Resources, wantResources[c.Name], a.Resources)
		}
	}
	if t.Failed() {
		t.Logf("rendered:\n%s", rendered)
	}

	// The JSON patch format renders the same.
	component6902 := filepath.Join(root, "vpa6902")
	if _, stderr, err := e.pluginE(t, "export", "web", "-n", e.ns, "--format=json6902", "--dir", component6902); err != nil {
		t.Fatalf("export --format=json6902: %v\n%s", err, stderr)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("namespace: "+e.ns+"\nresources:\n- web.yaml\ncomponents:\n- ../vpa6902\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again := e.c.Kubectl(t, "kustomize", overlay)
	var got6902 appsv1.Deployment
	if err := yaml.Unmarshal([]byte(again), &got6902); err != nil {
		t.Fatalf("%v in\n%s", err, again)
	}
	for i, c := range got6902.Spec.Template.Spec.Containers {
		if c.Name != got.Spec.Template.Spec.Containers[i].Name || !sameResources(c.Resources, wantResources[c.Name]) {
			t.Errorf("json6902: container %s: rendered %v, want %v", c.Name, c.Resources, wantResources[c.Name])
		}
	}
	if t.Failed() {
		t.Logf("json6902 rendered:\n%s", again)
	}
}

func sameResources(a, b corev1.ResourceRequirements) bool {
	same := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, q := range x {
			if w, ok := y[k]; !ok || w.Cmp(q) != 0 {
				return false
			}
		}
		return true
	}
	return same(a.Requests, b.Requests) && same(a.Limits, b.Limits)
}

// TestReportCSVAndImpersonation: report -o csv -l against the API server,
// and --as / --as-group: a user without rights gets the API server's
// forbidden error; once a Role lets the user's group read the namespace,
// the same command reports.
func TestReportCSVAndImpersonation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web"})
	for _, name := range []string{"web", "web-too"} {
		v := newVPA(e.ns, name, "web", vpav1.UpdateModeOff, nil)
		if name == "web" {
			v.Labels = map[string]string{"team": "shop"}
		}
		e.createVPA(t, v)
	}
	e.setRecommendation(t, "web", vpav1.RecommendedContainerResources{ContainerName: "app", Target: framework.Resources("50m", "100Mi"),
		LowerBound: framework.Resources("25m", "64Mi"), UpperBound: framework.Resources("100m", "200Mi"), UncappedTarget: framework.Resources("50m", "100Mi")})

	readCSV := func(out string) [][]string {
		t.Helper()
		recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatalf("%v in\n%s", err, out)
		}
		return recs
	}
	out, stderr, err := e.pluginE(t, "report", "-n", e.ns, "-l", "team=shop", "-o", "csv")
	if err != nil {
		t.Fatalf("report -o csv: %v\n%s", err, stderr)
	}
	recs := readCSV(out)
	if len(recs) != 2 || strings.Join(recs[0], ",") != strings.Join(report.CSVHeader, ",") {
		t.Fatalf("report -l team=shop -o csv: want the header and web's row, got\n%s", out)
	}
	if row := recs[1]; row[0] != e.ns || row[1] != "web" || row[2] != "Deployment/web" || row[3] != "Off" {
		t.Errorf("row %q, want %s/web of Deployment/web in mode Off", row, e.ns)
	}

	user := "e2e-viewer-" + e.ns
	group := "e2e-viewers-" + e.ns
	_, stderr, err = e.pluginE(t, "report", "-n", e.ns, "-o", "csv", "--as="+user, "--as-group="+group)
	if err == nil || !strings.Contains(stderr, "forbidden") || !strings.Contains(stderr, `User "`+user+`" cannot list resource "verticalpodautoscalers"`) {
		t.Fatalf("report as %s without rights: %v, want the API server's forbidden error; stderr:\n%s", user, err, stderr)
	}

	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "vpa-viewer"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"autoscaling.k8s.io"}, Resources: []string{"verticalpodautoscalers", "verticalpodautoscalercheckpoints"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"get", "list"}},
		},
	}
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "vpa-viewers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC takes effect once the API server's authorizer cache has the
	// binding: poll.
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		out, stderr, err = e.pluginE(t, "report", "-n", e.ns, "-o", "csv", "--as="+user, "--as-group="+group)
		return err == nil, nil
	})
	if recs := readCSV(out); len(recs) != 3 || recs[1][1] != "web" || recs[2][1] != "web-too" {
		t.Errorf("report as %s in group %s: want web and web-too, got\n%s", user, group, out)
	}
	// The kinds the Role does not grant are left out with a warning.
	if !strings.Contains(stderr, "cannot list limitranges (forbidden)") {
		t.Errorf("report as %s: no warning about limitranges on standard error:\n%s", user, stderr)
	}
	// Without the group, the user alone is still refused.
	if _, stderr, err := e.pluginE(t, "report", "-n", e.ns, "--as="+user); err == nil || !strings.Contains(stderr, "forbidden") {
		t.Errorf("report as %s without the group: %v, want forbidden; stderr:\n%s", user, err, stderr)
	}
}
