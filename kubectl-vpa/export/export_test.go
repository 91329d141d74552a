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
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

// The workloads of the fixture, as a user keeps them in Git: without a
// namespace (the overlay sets it). The live objects (below) are the same
// with the namespace.
const manifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: proxy
        image: proxy
        resources:
          requests: {cpu: 50m, memory: 64Mi, ephemeral-storage: 1Gi}
      - name: app
        image: app
        resources:
          requests: {cpu: 100m, memory: 128Mi}
          limits: {cpu: 200m, memory: 256Mi}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          labels: {app: nightly}
        spec:
          restartPolicy: OnFailure
          containers:
          - name: batch
            image: batch
`

func fixture(t *testing.T) *snapshot.Index {
	t.Helper()
	s := &snapshot.Snapshot{}
	for _, doc := range strings.Split(manifests, "---\n") {
		var obj runtime.Object
		if strings.Contains(doc, "kind: CronJob") {
			obj = &batchv1.CronJob{}
		} else {
			obj = &appsv1.Deployment{}
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatal(err)
		}
		obj.(metav1.Object).SetNamespace("shop")
		s.Workloads = append(s.Workloads, obj)
	}
	vpa := func(name, kind, target string, recs ...vpav1.RecommendedContainerResources) *vpav1.VerticalPodAutoscaler {
		v := &vpav1.VerticalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec:       vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target}},
		}
		if kind == "CronJob" {
			v.Spec.TargetRef.APIVersion = "batch/v1"
		}
		if len(recs) > 0 {
			v.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: recs}
		}
		return v
	}
	web := vpa("web", "Deployment", "web",
		vpav1.RecommendedContainerResources{ContainerName: "proxy", Target: rl("20m", "100Mi"), LowerBound: rl("10m", "80Mi"), UpperBound: rl("40m", "200Mi"), UncappedTarget: rl("20m", "100Mi")},
		vpav1.RecommendedContainerResources{ContainerName: "app", Target: rl("300m", "512Mi"), LowerBound: rl("250m", "400Mi"), UpperBound: rl("1", "1Gi"), UncappedTarget: rl("300m", "900Mi")})
	web.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{
		ContainerName: "app", MaxAllowed: rl("", "512Mi")}}}
	s.VPAs = []*vpav1.VerticalPodAutoscaler{
		web,
		vpa("nightly", "CronJob", "nightly", vpav1.RecommendedContainerResources{ContainerName: "batch", Target: rl("1500m", "2Gi")}),
		vpa("fresh", "Deployment", "web"),
		vpa("gone", "Deployment", "missing", vpav1.RecommendedContainerResources{ContainerName: "app", Target: rl("1", "1Gi")}),
	}
	ix, err := snapshot.NewIndex(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
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

func TestComputeWarnings(t *testing.T) {
	ix := fixture(t)
	r := Compute(ix, ix.VPAs, DefaultOptions())
	if len(r.Patches) != 2 {
		t.Fatalf("%d patches, want web's and nightly's", len(r.Patches))
	}
	want := []string{"shop/fresh: no recommendation yet; skipped", "shop/gone: "}
	if len(r.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", r.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.Contains(r.Warnings[i], w) {
			t.Errorf("warning %q, want one containing %q", r.Warnings[i], w)
		}
	}
}

// TestWriteDir checks the --dir layout of both formats against golden
// files: one patch file per workload and the Component listing them.
func TestWriteDir(t *testing.T) {
	ix := fixture(t)
	for _, format := range []string{FormatStrategic, FormatJSON6902} {
		t.Run(format, func(t *testing.T) {
			o := DefaultOptions()
			o.Format = format
			r := Compute(ix, ix.VPAs, o)
			dir := t.TempDir()
			files, err := WriteDir(dir, r.Patches, WriteOptions{Format: format, Value: o.Value})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"shop.deployment.web.yaml", "shop.cronjob.nightly.yaml", KustomizationFile}
			if strings.Join(files, " ") != strings.Join(want, " ") {
				t.Errorf("files %q, want %q", files, want)
			}
			for _, f := range files {
				got, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", "dir-"+format, f), got)
			}
		})
	}
}

// TestPatchesApply applies the patches to the manifests as kept in Git
// (the strategic-merge patch with apimachinery's strategic merge, the JSON
// patch with the RFC 6902 library kustomize also uses) and checks that the
// workloads come out with the exported requests and limits and nothing
// else of their resources changed. e2e/kubectlvpa runs kubectl kustomize
// on the written Component.
func TestPatchesApply(t *testing.T) {
	ix := fixture(t)
	proxy := func(cpu, mem string) corev1.ResourceRequirements {
		r := rl(cpu, mem)
		r[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		return corev1.ResourceRequirements{Requests: r}
	}
	tests := map[string]struct {
		format     string
		value      string
		containers []string
		// want are the resources of web's proxy and app and nightly's
		// batch after the patches.
		proxy, app, batch corev1.ResourceRequirements
	}{
		"strategic target": {format: FormatStrategic, value: ValueTarget, proxy: proxy("20m", "100Mi"),
			// memory capped to maxAllowed 512Mi; limits keep the ratio 2.
			app:   corev1.ResourceRequirements{Requests: rl("300m", "512Mi"), Limits: rl("600m", "1Gi")},
			batch: corev1.ResourceRequirements{Requests: rl("1500m", "2Gi")}},
		"json6902 target": {format: FormatJSON6902, value: ValueTarget, proxy: proxy("20m", "100Mi"),
			app:   corev1.ResourceRequirements{Requests: rl("300m", "512Mi"), Limits: rl("600m", "1Gi")},
			batch: corev1.ResourceRequirements{Requests: rl("1500m", "2Gi")}},
		// nightly's recommendation has no uncapped target or bounds:
		// no patch, its manifest stays as it is.
		"json6902 uncapped target of app only": {format: FormatJSON6902, value: ValueUncappedTarget, containers: []string{"app"},
			proxy: proxy("50m", "64Mi"), app: corev1.ResourceRequirements{Requests: rl("300m", "900Mi"), Limits: rl("600m", "1800Mi")}},
		"strategic lower bound": {format: FormatStrategic, value: ValueLowerBound, proxy: proxy("10m", "80Mi"),
			app: corev1.ResourceRequirements{Requests: rl("250m", "400Mi"), Limits: rl("500m", "800Mi")}},
	}
	docs := strings.Split(manifests, "---\n")
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := Options{Format: tc.format, Value: tc.value, Containers: tc.containers}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			r := Compute(ix, ix.VPAs, o)
			web, nightly := &appsv1.Deployment{}, &batchv1.CronJob{}
			apply(t, docs[0], web, r.Patches, tc.format)
			apply(t, docs[1], nightly, r.Patches, tc.format)
			cs := web.Spec.Template.Spec.Containers
			if len(cs) != 2 {
				t.Fatalf("web has %d containers after the patches, want 2", len(cs))
			}
			check(t, "web/proxy", cs[0], "proxy", tc.proxy)
			check(t, "web/app", cs[1], "app", tc.app)
			check(t, "nightly/batch", nightly.Spec.JobTemplate.Spec.Template.Spec.Containers[0], "batch", tc.batch)
		})
	}
}

// apply applies the patches of the manifest's workload to it, as their
// format says, into obj.
func apply(t *testing.T, manifest string, obj runtime.Object, patches []Patch, format string) {
	t.Helper()
	doc, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	for _, p := range patches {
		if p.Workload.Kind != m.Kind || p.Workload.Name != m.Name {
			continue
		}
		data, err := render(p, WriteOptions{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		pj, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		if format == FormatJSON6902 {
			jp, err := jsonpatch.DecodePatch(pj)
			if err != nil {
				t.Fatal(err)
			}
			if doc, err = jp.Apply(doc); err != nil {
				t.Fatalf("JSON patch of %s: %v\n%s", m.Name, err, data)
			}
			continue
		}
		if doc, err = strategicpatch.StrategicMergePatch(doc, pj, obj); err != nil {
			t.Fatalf("strategic-merge patch of %s: %v\n%s", m.Name, err, data)
		}
	}
	if err := json.Unmarshal(doc, obj); err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, what string, c corev1.Container, name string, want corev1.ResourceRequirements) {
	t.Helper()
	if c.Name != name || c.Image != name {
		t.Errorf("%s: container %s (image %s), want %s", what, c.Name, c.Image, name)
	}
	if !sameList(c.Resources.Requests, want.Requests) || !sameList(c.Resources.Limits, want.Limits) {
		t.Errorf("%s: requests %v limits %v, want requests %v limits %v", what, c.Resources.Requests, c.Resources.Limits, want.Requests, want.Limits)
	}
}

func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if w, ok := b[k]; !ok || w.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		o       Options
		wantErr string
	}{
		"defaults":        {o: DefaultOptions()},
		"unknown format":  {o: Options{Format: "merge", Value: ValueTarget}, wantErr: `--format "merge"`},
		"unknown value":   {o: Options{Format: FormatStrategic, Value: "p99"}, wantErr: `--value "p99"`},
		"empty container": {o: Options{Format: FormatStrategic, Value: ValueTarget, Containers: []string{""}}, wantErr: "empty container name"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.o.Validate()
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
