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

package target

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

const ns = "ns"

var fooGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Foo"}

func owner(apiVersion, kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptr.To(true)}}
}

func selector(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

func objects() []runtime.Object {
	return []runtime.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{Selector: selector("web")}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1", OwnerReferences: owner("apps/v1", "Deployment", "web")}, Spec: appsv1.ReplicaSetSpec{Selector: selector("web")}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "roll-1", OwnerReferences: owner("example.com/v1", "Foo", "roll")}, Spec: appsv1.ReplicaSetSpec{Selector: selector("roll")}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}, Spec: appsv1.ReplicaSetSpec{Selector: selector("orphan")}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{Selector: selector("db")}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}, Spec: appsv1.DaemonSetSpec{Selector: selector("agent")}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job"}, Spec: batchv1.JobSpec{Selector: selector("job")}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cron"}, Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "cron"}}}}}}},
		&corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rc"}, Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "rc"}}},
	}
}

type env struct {
	r          *Resolver
	scaleCalls *atomic.Int32
	clock      *clocktesting.FakeClock
}

// newEnv builds a Resolver over typed listers of a fake clientset. Foo
// objects "roll" and "solo" have a scale subresource; "empty" has one with no
// selector; "owned" is a Foo owned by the Foo "roll".
func newEnv(t *testing.T) env { return newEnvWith(t, false) }

// newEnvWith is newEnv; with trimmed, the Resolver reads IndexerWorkloads
// holding what TrimWorkload makes of the objects, as the recommender's do.
func newEnvWith(t *testing.T, trimmed bool) env {
	t.Helper()
	client := fake.NewClientset(objects()...)
	factory := informers.NewSharedInformerFactory(client, 0)
	calls := &atomic.Int32{}
	scales := scaleFunc(func(_ context.Context, gk schema.GroupKind, namespace, name string) (*autoscalingv1.Scale, error) {
		calls.Add(1)
		if gk != fooGVK.GroupKind() {
			return nil, &meta.NoKindMatchError{GroupKind: gk}
		}
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		switch name {
		case "roll", "solo":
			s.Status.Selector = "app=" + name
		case "owned":
			s.Status.Selector = "app=owned"
			s.OwnerReferences = owner("example.com/v1", "Foo", "roll")
		case "empty":
		default:
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "foos"}, name)
		}
		return s, nil
	})
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var workloads Workloads = Listers{
		Deployments:            factory.Apps().V1().Deployments().Lister(),
		ReplicaSets:            factory.Apps().V1().ReplicaSets().Lister(),
		StatefulSets:           factory.Apps().V1().StatefulSets().Lister(),
		DaemonSets:             factory.Apps().V1().DaemonSets().Lister(),
		Jobs:                   factory.Batch().V1().Jobs().Lister(),
		CronJobs:               factory.Batch().V1().CronJobs().Lister(),
		ReplicationControllers: factory.Core().V1().ReplicationControllers().Lister(),
	}
	if trimmed {
		iw := IndexerWorkloads{}
		for _, obj := range objects() {
			w, err := TrimWorkload(obj)
			if err != nil {
				t.Fatal(err)
			}
			kind := w.(*Workload).Kind
			if iw[kind] == nil {
				iw[kind] = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			}
			if err := iw[kind].Add(w); err != nil {
				t.Fatal(err)
			}
		}
		workloads = iw
	}
	r := NewResolver(workloads, scales, Options{Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return env{r: r, scaleCalls: calls, clock: clk}
}

// scaleFunc is a ScaleGetter.
type scaleFunc func(ctx context.Context, gk schema.GroupKind, namespace, name string) (*autoscalingv1.Scale, error)

func (f scaleFunc) GetScale(ctx context.Context, gk schema.GroupKind, namespace, name string) (*autoscalingv1.Scale, error) {
	return f(ctx, gk, namespace, name)
}

func vpa(name, apiVersion, kind, target string) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.Unix(100, 0)},
		Spec: vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{
			APIVersion: apiVersion, Kind: kind, Name: target}},
	}
}

func TestSelector(t *testing.T) {
	t.Run("full objects", func(t *testing.T) { testSelector(t, newEnv(t)) })
	t.Run("trimmed objects", func(t *testing.T) { testSelector(t, newEnvWith(t, true)) })
}

func testSelector(t *testing.T, e env) {
	tests := map[string]struct {
		vpa     *vpav1.VerticalPodAutoscaler
		want    string
		wantErr string
	}{
		"deployment":            {vpa: vpa("v", "apps/v1", "Deployment", "web"), want: "app=web"},
		"replicaset":            {vpa: vpa("v", "apps/v1", "ReplicaSet", "web-1"), want: "app=web"},
		"statefulset":           {vpa: vpa("v", "apps/v1", "StatefulSet", "db"), want: "app=db"},
		"daemonset":             {vpa: vpa("v", "apps/v1", "DaemonSet", "agent"), want: "app=agent"},
		"job":                   {vpa: vpa("v", "batch/v1", "Job", "job"), want: "app=job"},
		"cronjob uses template": {vpa: vpa("v", "batch/v1", "CronJob", "cron"), want: "app=cron"},
		"replicationcontroller": {vpa: vpa("v", "v1", "ReplicationController", "rc"), want: "app=rc"},
		"custom resource scale": {vpa: vpa("v", "example.com/v1", "Foo", "roll"), want: "app=roll"},
		"missing deployment":    {vpa: vpa("v", "apps/v1", "Deployment", "nope"), wantErr: "Deployment ns/nope does not exist"},
		"empty scale selector":  {vpa: vpa("v", "example.com/v1", "Foo", "empty"), wantErr: "Resource ns/empty has an empty selector for scale sub-resource"},
		"missing custom":        {vpa: vpa("v", "example.com/v1", "Foo", "nope"), wantErr: "not found"},
		"unknown kind":          {vpa: vpa("v", "other.io/v1", "Bar", "x"), wantErr: "no matches for kind"},
		"nil targetRef":         {vpa: &vpav1.VerticalPodAutoscaler{}, wantErr: "targetRef not defined"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sel, err := e.r.Selector(context.Background(), tc.vpa)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sel.String() != tc.want {
				t.Errorf("selector = %q, want %q", sel, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	e := newEnv(t)
	tests := map[string]struct {
		vpa     *vpav1.VerticalPodAutoscaler
		wantErr string
	}{
		"topmost deployment":    {vpa: vpa("v", "apps/v1", "Deployment", "web")},
		"standalone replicaset": {vpa: vpa("v", "apps/v1", "ReplicaSet", "orphan")},
		"topmost custom":        {vpa: vpa("v", "example.com/v1", "Foo", "roll")},
		"replicaset of a deployment": {
			vpa:     vpa("v", "apps/v1", "ReplicaSet", "web-1"),
			wantErr: "The target apps/v1.ReplicaSet/web-1 has a parent controller but it should point to a topmost well-known or scalable controller",
		},
		"custom owned by custom": {
			vpa:     vpa("v", "example.com/v1", "Foo", "owned"),
			wantErr: "The target example.com/v1.Foo/owned has a parent controller but it should point to a topmost well-known or scalable controller",
		},
		"missing target": {
			vpa:     vpa("v", "apps/v1", "Deployment", "nope"),
			wantErr: "Cannot read targetRef. Reason: Deployment ns/nope does not exist",
		},
		"nil targetRef": {vpa: &vpav1.VerticalPodAutoscaler{}, wantErr: "Cannot read targetRef"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := e.r.Resolve(context.Background(), tc.vpa)
			if tc.wantErr != "" {
				var ce *ConfigError
				if err == nil || !asConfigError(err, &ce) || ce.Message != tc.wantErr {
					t.Fatalf("error = %v, want ConfigError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.VPA != tc.vpa || got.Selector == nil || got.Ref.Name != tc.vpa.Spec.TargetRef.Name {
				t.Errorf("unexpected target %+v", got)
			}
		})
	}
}

func asConfigError(err error, target **ConfigError) bool {
	ce, ok := err.(*ConfigError)
	*target = ce
	return ok
}

func TestPodController(t *testing.T) {
	e := newEnv(t)
	tests := map[string]struct {
		owners  []metav1.OwnerReference
		want    *Ref
		wantErr string
	}{
		"no owner":                 {},
		"non-controller owner":     {owners: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1"}}},
		"replicaset of deployment": {owners: owner("apps/v1", "ReplicaSet", "web-1"), want: &Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"}},
		"replicaset of custom":     {owners: owner("apps/v1", "ReplicaSet", "roll-1"), want: &Ref{APIVersion: "example.com/v1", Kind: "Foo", Namespace: ns, Name: "roll"}},
		"custom directly":          {owners: owner("example.com/v1", "Foo", "solo"), want: &Ref{APIVersion: "example.com/v1", Kind: "Foo", Namespace: ns, Name: "solo"}},
		"custom chain":             {owners: owner("example.com/v1", "Foo", "owned"), want: &Ref{APIVersion: "example.com/v1", Kind: "Foo", Namespace: ns, Name: "roll"}},
		"node (mirror pod)":        {owners: owner("v1", "Node", "n1"), want: &Ref{APIVersion: "v1", Kind: "Node", Namespace: ns, Name: "n1"}},
		"unscalable owner":         {owners: owner("example.com/v1", "Foo", "gone")},
		"missing replicaset":       {owners: owner("apps/v1", "ReplicaSet", "gone"), wantErr: "ReplicaSet ns/gone does not exist"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", OwnerReferences: tc.owners}}
			got, err := e.r.PodController(context.Background(), pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScaleCache(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v := vpa("v", "example.com/v1", "Foo", "solo")
	for range 3 {
		if _, err := e.r.Selector(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.scaleCalls.Load(); n != 1 {
		t.Fatalf("scale reads within TTL = %d, want 1", n)
	}
	e.clock.Step(61 * time.Second)
	if _, err := e.r.Selector(ctx, v); err != nil {
		t.Fatal(err)
	}
	if n := e.scaleCalls.Load(); n != 2 {
		t.Fatalf("scale reads after TTL = %d, want 2", n)
	}
	missing := vpa("v", "example.com/v1", "Foo", "nope")
	_, _ = e.r.Selector(ctx, missing)
	_, _ = e.r.Selector(ctx, missing)
	if n := e.scaleCalls.Load(); n != 3 {
		t.Fatalf("failed reads within error TTL = %d, want 3", n)
	}
	e.clock.Step(11 * time.Second)
	_, _ = e.r.Selector(ctx, missing)
	if n := e.scaleCalls.Load(); n != 4 {
		t.Fatalf("failed reads after error TTL = %d, want 4", n)
	}
}

func TestMatcher(t *testing.T) {
	web := &Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"}
	mk := func(name string, created int64, kind, target, app string) *Target {
		v := vpa(name, "apps/v1", kind, target)
		v.CreationTimestamp = metav1.Unix(created, 0)
		sel, _ := metav1.LabelSelectorAsSelector(selector(app))
		return &Target{VPA: v, Ref: RefFromTargetRef(ns, v.Spec.TargetRef), Selector: sel}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{"app": "web"}}}
	tests := map[string]struct {
		targets    []*Target
		controller *Ref
		want       string
		selecting  []string
	}{
		"single match": {
			targets: []*Target{mk("a", 10, "Deployment", "web", "web")}, controller: web, want: "a", selecting: []string{"a"},
		},
		"older wins": {
			targets:    []*Target{mk("a", 20, "Deployment", "web", "web"), mk("b", 10, "Deployment", "web", "web")},
			controller: web, want: "b", selecting: []string{"b", "a"},
		},
		"same age, smaller name wins": {
			targets:    []*Target{mk("z", 10, "Deployment", "web", "web"), mk("m", 10, "Deployment", "web", "web")},
			controller: web, want: "m", selecting: []string{"m", "z"},
		},
		"targetRef is not the pod's controller": {
			targets:    []*Target{mk("a", 10, "StatefulSet", "web", "web")},
			controller: web, selecting: []string{"a"},
		},
		"selector does not match": {
			targets:    []*Target{mk("a", 10, "Deployment", "web", "other")},
			controller: web,
		},
		"pod without controller": {
			targets:   []*Target{mk("a", 10, "Deployment", "web", "web")},
			selecting: []string{"a"},
		},
		"nil entries ignored": {
			targets: []*Target{nil, {VPA: nil}}, controller: web,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := NewMatcher(tc.targets)
			got := m.ControllingVPA(pod, tc.controller)
			gotName := ""
			if got != nil {
				gotName = got.VPA.Name
			}
			if gotName != tc.want {
				t.Errorf("ControllingVPA = %q, want %q", gotName, tc.want)
			}
			var sel []string
			for _, s := range m.Selecting(pod.Namespace, pod.Labels) {
				sel = append(sel, s.VPA.Name)
			}
			if strings.Join(sel, ",") != strings.Join(tc.selecting, ",") {
				t.Errorf("Selecting = %v, want %v", sel, tc.selecting)
			}
		})
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Labels: map[string]string{"app": "web"}}}
	if got := NewMatcher([]*Target{mk("a", 1, "Deployment", "web", "web")}).ControllingVPA(other, &Ref{Kind: "Deployment", Name: "web", Namespace: "elsewhere"}); got != nil {
		t.Errorf("matched a VPA of another namespace: %v", got.VPA.Name)
	}
}

func TestTrimWorkload(t *testing.T) {
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"big": "y"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img", Env: []corev1.EnvVar{{Name: "A", Value: "B"}}}}},
	}
	meta := metav1.ObjectMeta{
		Namespace: ns, Name: "w", UID: "uid-1", ResourceVersion: "7",
		Labels:          map[string]string{"tier": "web"},
		Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
		OwnerReferences: owner("apps/v1", "Deployment", "web"),
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}
	// No labels: a controller's pods are found by its selector.
	wantMeta := metav1.ObjectMeta{Namespace: ns, Name: "w", UID: "uid-1", ResourceVersion: "7",
		OwnerReferences: meta.OwnerReferences}
	sel := selector("x")
	parsed := labels.SelectorFromSet(labels.Set{"app": "x"}) // what sel and the template's labels select
	trimmed := &Workload{ObjectMeta: wantMeta, Kind: KindJob, Selector: parsed}
	tests := map[string]struct {
		in, want any
	}{
		"deployment": {
			in:   &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: sel, Template: template, Replicas: ptr.To[int32](3)}, Status: appsv1.DeploymentStatus{Replicas: 3}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindDeployment, Selector: parsed, Replicas: ptr.To[int32](3), Surge: 1},
		},
		"deployment with maxSurge 50% of 3 replicas": {
			in: &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: sel, Template: template, Replicas: ptr.To[int32](3),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("50%"))}}}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindDeployment, Selector: parsed, Replicas: ptr.To[int32](3), Surge: 2},
		},
		"deployment with Recreate adds no pods": {
			in: &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: sel, Template: template, Replicas: ptr.To[int32](3),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindDeployment, Selector: parsed, Replicas: ptr.To[int32](3)},
		},
		"replicaset": {
			in:   &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: template, Replicas: ptr.To[int32](2)}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindReplicaSet, Selector: parsed, Replicas: ptr.To[int32](2)},
		},
		"statefulset without replicas": {
			in:   &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: sel, Template: template}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindStatefulSet, Selector: parsed},
		},
		// Upstream 1.8 counts the pods a DaemonSet should run; 1.7 its ready ones.
		"daemonset counts the pods it should run": {
			in:   &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: template}, Status: appsv1.DaemonSetStatus{NumberReady: 4, DesiredNumberScheduled: 5}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindDaemonSet, Selector: parsed, Replicas: ptr.To[int32](5)},
		},
		"job": {
			in:   &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Selector: sel, Template: template}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindJob, Selector: parsed},
		},
		"cronjob keeps the job template's labels": {
			in: &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{Schedule: "* * * * *",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template}}}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindCronJob, Selector: parsed},
		},
		"replicationcontroller": {
			in:   &corev1.ReplicationController{ObjectMeta: meta, Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "x"}, Template: &template, Replicas: ptr.To[int32](1)}},
			want: &Workload{ObjectMeta: wantMeta, Kind: KindReplicationController, Selector: parsed, Replicas: ptr.To[int32](1)},
		},
		"a workload is already trimmed": {in: trimmed, want: trimmed},
		"other objects lose only managed fields": {
			in:   &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}},
			want: &corev1.ConfigMap{ObjectMeta: func() metav1.ObjectMeta { m := meta; m.ManagedFields = nil; return m }(), Data: map[string]string{"k": "v"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := TrimWorkload(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("TrimWorkload =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

func TestStripManagedFields(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	if _, err := StripManagedFields(p); err != nil || p.ManagedFields != nil {
		t.Errorf("managedFields kept: %v %v", p.ManagedFields, err)
	}
}

// TestWorkloadSelectorErrors: a controller without a selector, or with one
// that does not parse, is cached with the reason, which Resolve reports.
func TestWorkloadSelectorErrors(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: ns, Name: "w"}
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
	tests := map[string]struct {
		obj  any
		want string
	}{
		"no selector":      {obj: &appsv1.Deployment{ObjectMeta: meta}, want: "Deployment " + ns + "/w has no selector"},
		"invalid selector": {obj: &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Selector: bad}}, want: "invalid selector of Job " + ns + "/w: "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w, ok := WorkloadOf(tc.obj)
			if !ok {
				t.Fatal("not a workload")
			}
			sel, err := w.LabelSelector()
			if sel != nil || err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("LabelSelector() = %v, %v; want an error starting %q", sel, err, tc.want)
			}
		})
	}
}
