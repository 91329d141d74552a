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

// Package policy checks the recommender's policy controller against the
// local control plane, run with the shipped RBAC: VerticalPodAutoscalerPolicy
// objects and the namespace label openvpa.io/vpa-update-mode give workloads
// managed VPAs, which follow the policies, the workloads and users' own VPAs.
//
// The tests run one after another, each with its own controller: a policy
// is cluster-scoped, and two controllers would both act on it. Each
// controller's recommender has a name of its own, so that its loop leaves
// every other test's VPAs alone; each test's policies select only its own
// namespaces, by a label.
package policy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
	"github.com/openvpa/openvpa/e2e/framework"
)

const timeout = time.Minute

type env struct {
	c   *framework.Cluster
	vpa vpaclient.Interface
	// id is unique to the test: the namespaces' selection label's value.
	id string
}

// selectLabel marks the namespaces a test's policies select.
const selectLabel = "openvpa-e2e-policy"

func setup(t *testing.T) *env {
	t.Helper()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "recommender")
	e := &env{c: c, vpa: vpaclient.NewForConfigOrDie(c.Config)}
	e.id = strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(e.id) > 50 {
		e.id = e.id[:50]
	}
	e.id = strings.Trim(e.id, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	return e
}

// run starts a recommender with the policy controller, as deploy/ runs it.
func (e *env) run(t *testing.T, extra ...string) *framework.Process {
	t.Helper()
	return e.c.RunComponent(t, framework.Component{
		Binary: e.c.BuildBinary(t, "./recommender"),
		Args: append([]string{"--policy-controller", "--recommender-name=e2e-" + e.id, "--address=127.0.0.1:0",
			"--checkpoints-gc-interval=24h", "--v=4"}, extra...),
		ServiceAccount: "kube-system/vpa-recommender",
	})
}

// namespace creates a namespace the test's policies select (selected) or not.
func (e *env) namespace(t *testing.T, selected bool) string {
	t.Helper()
	ns := e.c.NewNamespace(t)
	if selected {
		e.label(t, ns, selectLabel, e.id)
	}
	return ns
}

// label sets (value non-empty) or removes a namespace's label.
func (e *env) label(t *testing.T, ns, key, value string) {
	t.Helper()
	arg := key + "=" + value
	if value == "" {
		arg = key + "-"
	}
	e.c.Kubectl(t, "label", "--overwrite", "namespace", ns, arg)
}

func mode(m vpav1.UpdateMode) *vpav1.UpdateMode { return &m }

// createPolicy creates a policy over the test's namespaces, deleted when the test ends.
func (e *env) createPolicy(t *testing.T, name string, priority int32, m vpav1.UpdateMode, selector map[string]string) {
	t.Helper()
	p := &policyv1alpha1.VerticalPodAutoscalerPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.VerticalPodAutoscalerPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{selectLabel: e.id}},
			Priority:          priority,
			Template:          policyv1alpha1.VerticalPodAutoscalerTemplate{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: mode(m)}},
		},
	}
	if selector != nil {
		p.Spec.Selector = &metav1.LabelSelector{MatchLabels: selector}
	}
	if _, err := e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting policy %s: %v", name, err)
		}
	})
}

func (e *env) policyName(suffix string) string { return e.id + "-" + suffix }

// updatePolicy changes a policy, retrying on conflicts with the controller's status writes.
func (e *env) updatePolicy(t *testing.T, name string, change func(*policyv1alpha1.VerticalPodAutoscalerPolicy)) {
	t.Helper()
	framework.WaitFor(t, timeout, func() (bool, error) {
		p, err := e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(p)
		_, err = e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Update(context.Background(), p, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// workloads creates one workload of every kind the controller covers, each
// with label tier=<kind in lower case>, and returns the managed VPA names
// they should get. The Deployment's ReplicaSet must get none.
func (e *env) workloads(t *testing.T, ns string) []string {
	t.Helper()
	ctx := context.Background()
	k := e.c.Client
	tmpl := func(app string) corev1.PodTemplateSpec {
		pt := framework.Workload{Name: app}.PodTemplate()
		// No node has the label: the workloads need no pods.
		pt.Spec.NodeSelector = map[string]string{"openvpa-e2e/none": "true"}
		return pt
	}
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	meta := func(name, tier string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"tier": tier}}
	}
	jobTmpl := func(app string) corev1.PodTemplateSpec {
		pt := tmpl(app)
		pt.Spec.RestartPolicy = corev1.RestartPolicyNever
		return pt
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(k.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: meta("web", "deployment"),
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: sel("web"), Template: tmpl("web")}}, metav1.CreateOptions{}))
	must(k.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta("db", "statefulset"),
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: sel("db"), Template: tmpl("db")}}, metav1.CreateOptions{}))
	must(k.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta("agent", "daemonset"),
		Spec: appsv1.DaemonSetSpec{Selector: sel("agent"), Template: tmpl("agent")}}, metav1.CreateOptions{}))
	must(k.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta("bare", "replicaset"),
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: sel("bare"), Template: tmpl("bare")}}, metav1.CreateOptions{}))
	must(k.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: meta("nightly", "cronjob"),
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", Suspend: ptr.To(true),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTmpl("nightly")}}}}, metav1.CreateOptions{}))
	must(k.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: meta("once", "job"),
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: jobTmpl("once")}}, metav1.CreateOptions{}))
	must(k.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{ObjectMeta: meta("legacy", "replicationcontroller"),
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](1), Selector: map[string]string{"app": "legacy"}, Template: ptr.To(tmpl("legacy"))}},
		metav1.CreateOptions{}))
	// The Deployment's ReplicaSet exists before the VPAs are checked.
	framework.WaitFor(t, timeout, func() (bool, error) {
		rs, err := k.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(rs.Items) > 0, err
	})
	return []string{"cronjob-nightly", "daemonset-agent", "deployment-web", "job-once", "replicaset-bare", "replicationcontroller-legacy", "statefulset-db"}
}

// vpas returns the namespace's VPAs by name.
func (e *env) vpas(ns string) (map[string]*vpav1.VerticalPodAutoscaler, error) {
	l, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]*vpav1.VerticalPodAutoscaler{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out, nil
}

// managed is what a test expects of a managed VPA: the policy that made it
// ("" for the namespace label) and its mode.
type managed struct {
	policy string
	mode   vpav1.UpdateMode
}

// waitForVPAs waits until the namespace's VPAs are exactly want (managed
// ones by name) plus the unmanaged ones named in users.
func (e *env) waitForVPAs(t *testing.T, ns string, want map[string]managed, users ...string) map[string]*vpav1.VerticalPodAutoscaler {
	t.Helper()
	var got map[string]*vpav1.VerticalPodAutoscaler
	framework.WaitFor(t, timeout, func() (bool, error) {
		var err error
		if got, err = e.vpas(ns); err != nil {
			return false, err
		}
		var problems []string
		for name, v := range got {
			if slices.Contains(users, name) {
				continue
			}
			w, ok := want[name]
			if !ok {
				problems = append(problems, "unexpected "+name)
				continue
			}
			if v.Labels[policyv1alpha1.LabelManagedBy] != policyv1alpha1.ManagedByPolicyController || v.Labels[policyv1alpha1.LabelPolicy] != w.policy {
				problems = append(problems, fmt.Sprintf("%s labels %v, want policy %q", name, v.Labels, w.policy))
			}
			if v.Spec.UpdatePolicy == nil || v.Spec.UpdatePolicy.UpdateMode == nil || *v.Spec.UpdatePolicy.UpdateMode != w.mode {
				problems = append(problems, fmt.Sprintf("%s mode %v, want %s", name, v.Spec.UpdatePolicy, w.mode))
			}
		}
		for name := range want {
			if _, ok := got[name]; !ok {
				problems = append(problems, "missing "+name)
			}
		}
		for _, u := range users {
			if _, ok := got[u]; !ok {
				problems = append(problems, "missing the user's "+u)
			}
		}
		if len(problems) > 0 {
			slices.Sort(problems)
			return false, fmt.Errorf("namespace %s: %s", ns, strings.Join(problems, "; "))
		}
		return true, nil
	})
	return got
}

func all(names []string, m managed) map[string]managed {
	out := map[string]managed{}
	for _, n := range names {
		out[n] = m
	}
	return out
}

// waitForStatus waits until the policy's status says selected, managed and
// conflicts, for its current generation, and Ready.
func (e *env) waitForStatus(t *testing.T, name string, selected, managedN, conflicts int32) *policyv1alpha1.VerticalPodAutoscalerPolicy {
	t.Helper()
	var p *policyv1alpha1.VerticalPodAutoscalerPolicy
	framework.WaitFor(t, timeout, func() (bool, error) {
		var err error
		p, err = e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := p.Status
		ready := meta.FindStatusCondition(s.Conditions, policyv1alpha1.ConditionReady)
		conflicting := meta.IsStatusConditionTrue(s.Conditions, policyv1alpha1.ConditionConflicting)
		if s.ObservedGeneration != p.Generation || s.SelectedWorkloads != selected || s.ManagedVPAs != managedN || s.Conflicts != conflicts ||
			ready == nil || ready.Status != metav1.ConditionTrue || conflicting != (conflicts > 0) {
			return false, fmt.Errorf("policy %s generation %d: status %+v, want selected %d, managed %d, conflicts %d, Ready",
				name, p.Generation, s, selected, managedN, conflicts)
		}
		return true, nil
	})
	return p
}

func userVPA(ns, name, kind, target string) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: mode(vpav1.UpdateModeOff)},
		},
	}
}

// TestPolicyOverTwoNamespaces: a VPA for each covered kind in both
// namespaces, owned by its workload; new and deleted workloads; a change of
// mode; a user's VPA displacing the managed one and its return.
func TestPolicyOverTwoNamespaces(t *testing.T) {
	e := setup(t)
	a, b, other := e.namespace(t, true), e.namespace(t, true), e.namespace(t, false)
	names := e.workloads(t, a)
	e.workloads(t, b)
	e.workloads(t, other)
	pol := e.policyName("all")
	e.createPolicy(t, pol, 0, vpav1.UpdateModeOff, nil)
	e.run(t)

	off := managed{policy: pol, mode: vpav1.UpdateModeOff}
	got := e.waitForVPAs(t, a, all(names, off))
	e.waitForVPAs(t, b, all(names, off))
	e.waitForStatus(t, pol, 14, 14, 0)
	if vpas, err := e.vpas(other); err != nil || len(vpas) != 0 {
		t.Errorf("the namespace the policy does not select has VPAs %v (%v)", slices.Collect(maps.Keys(vpas)), err)
	}
	web := got["deployment-web"]
	if ref := web.Spec.TargetRef; ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != "web" {
		t.Errorf("targetRef %+v", ref)
	}
	d, err := e.c.Client.AppsV1().Deployments(a).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(web.OwnerReferences) != 1 || web.OwnerReferences[0].UID != d.UID {
		t.Errorf("owners %+v, want the Deployment %s", web.OwnerReferences, d.UID)
	}

	t.Run("a new Deployment gets its VPA, a deleted one loses it", func(t *testing.T) {
		e.c.CreateDeployment(t, a, framework.Workload{Name: "api"})
		withAPI := all(append(slices.Clone(names), "deployment-api"), off)
		e.waitForVPAs(t, a, withAPI)
		if err := e.c.Client.AppsV1().Deployments(a).Delete(context.Background(), "api", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitForVPAs(t, a, all(names, off))
		e.waitForStatus(t, pol, 14, 14, 0)
	})

	t.Run("a change of mode updates every managed VPA", func(t *testing.T) {
		before, err := e.vpas(a)
		if err != nil {
			t.Fatal(err)
		}
		e.updatePolicy(t, pol, func(p *policyv1alpha1.VerticalPodAutoscalerPolicy) {
			p.Spec.Template.UpdatePolicy.UpdateMode = mode(vpav1.UpdateModeInitial)
		})
		initial := managed{policy: pol, mode: vpav1.UpdateModeInitial}
		after := e.waitForVPAs(t, a, all(names, initial))
		e.waitForVPAs(t, b, all(names, initial))
		for name, v := range after {
			if v.UID != before[name].UID {
				t.Errorf("VPA %s was replaced, not updated", name)
			}
		}
		off = initial
	})

	t.Run("a user's VPA displaces the managed one until it is deleted", func(t *testing.T) {
		if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(a).Create(context.Background(), userVPA(a, "mine", "Deployment", "web"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		without := all(names, off)
		delete(without, "deployment-web")
		e.waitForVPAs(t, a, without, "mine")
		e.waitForStatus(t, pol, 14, 13, 0)
		framework.WaitFor(t, timeout, func() (bool, error) {
			evs, err := e.c.Client.CoreV1().Events(a).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=mine"})
			if err != nil {
				return false, err
			}
			for _, ev := range evs.Items {
				if ev.Reason == "ManagedVPARemoved" && strings.Contains(ev.Message, "deployment-web") && strings.Contains(ev.Message, pol) {
					return true, nil
				}
			}
			return false, fmt.Errorf("no ManagedVPARemoved event on the user's VPA: %d events", len(evs.Items))
		})
		if err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(a).Delete(context.Background(), "mine", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitForVPAs(t, a, all(names, off))
		e.waitForStatus(t, pol, 14, 14, 0)
	})
}

// TestDeletingAPolicyRemovesOnlyItsVPAs: two policies over different
// workloads of one namespace, and a user's VPA; deleting one policy
// removes its VPAs and nothing else.
func TestDeletingAPolicyRemovesOnlyItsVPAs(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t, true)
	e.workloads(t, ns)
	e.c.CreateDeployment(t, ns, framework.Workload{Name: "mine"})
	if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(ns).Create(context.Background(), userVPA(ns, "mine", "Deployment", "mine"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deployments, rest := e.policyName("deployments"), e.policyName("rest")
	e.createPolicy(t, deployments, 0, vpav1.UpdateModeOff, map[string]string{"tier": "deployment"})
	e.createPolicy(t, rest, 0, vpav1.UpdateModeInitial, map[string]string{"tier": "statefulset"})
	e.run(t)
	want := map[string]managed{
		"deployment-web": {policy: deployments, mode: vpav1.UpdateModeOff},
		"statefulset-db": {policy: rest, mode: vpav1.UpdateModeInitial},
	}
	e.waitForVPAs(t, ns, want, "mine")
	e.waitForStatus(t, deployments, 1, 1, 0)
	if err := e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Delete(context.Background(), deployments, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	delete(want, "deployment-web")
	e.waitForVPAs(t, ns, want, "mine")
	e.waitForStatus(t, rest, 1, 1, 0)
}

// TestNamespaceLabel: the label alone gives every workload of the
// namespace a VPA with its mode; a new value updates them; removing it
// removes them.
func TestNamespaceLabel(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t, false)
	names := e.workloads(t, ns)
	e.run(t)
	e.label(t, ns, policyv1alpha1.LabelNamespaceUpdateMode, "Off")
	e.waitForVPAs(t, ns, all(names, managed{mode: vpav1.UpdateModeOff}))
	e.label(t, ns, policyv1alpha1.LabelNamespaceUpdateMode, "InPlaceOrRecreate")
	e.waitForVPAs(t, ns, all(names, managed{mode: vpav1.UpdateModeInPlaceOrRecreate}))

	// A value that is not a mode is reported on the namespace (whose events,
	// as any cluster-scoped object's, are in namespace default), and the VPAs go.
	e.label(t, ns, policyv1alpha1.LabelNamespaceUpdateMode, "Sometimes")
	framework.WaitFor(t, timeout, func() (bool, error) {
		evs, err := e.c.Client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(),
			metav1.ListOptions{FieldSelector: "reason=InvalidUpdateMode,involvedObject.name=" + ns})
		if err != nil {
			return false, err
		}
		return len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "Sometimes"), nil
	})
	e.waitForVPAs(t, ns, nil)

	e.label(t, ns, policyv1alpha1.LabelNamespaceUpdateMode, "Initial")
	e.waitForVPAs(t, ns, all(names, managed{mode: vpav1.UpdateModeInitial}))
	e.label(t, ns, policyv1alpha1.LabelNamespaceUpdateMode, "")
	e.waitForVPAs(t, ns, nil)
}

// TestOverlappingPolicies: two policies select the same workloads; the
// higher priority manages them, and both show the conflict. Raising the
// other's priority hands the VPAs over, in place.
func TestOverlappingPolicies(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t, true)
	e.c.CreateDeployment(t, ns, framework.Workload{Name: "web"})
	low, high := e.policyName("low"), e.policyName("high")
	e.createPolicy(t, low, 0, vpav1.UpdateModeOff, nil)
	e.createPolicy(t, high, 5, vpav1.UpdateModeInitial, nil)
	e.run(t)
	before := e.waitForVPAs(t, ns, map[string]managed{"deployment-web": {policy: high, mode: vpav1.UpdateModeInitial}})
	p := e.waitForStatus(t, low, 1, 0, 1)
	if len(p.Status.ConflictingWorkloads) != 1 || !strings.Contains(p.Status.ConflictingWorkloads[0], ns+"/Deployment/web (also policy "+high+")") {
		t.Errorf("conflicting workloads %v", p.Status.ConflictingWorkloads)
	}
	e.waitForStatus(t, high, 1, 1, 1)

	e.updatePolicy(t, low, func(p *policyv1alpha1.VerticalPodAutoscalerPolicy) { p.Spec.Priority = 10 })
	after := e.waitForVPAs(t, ns, map[string]managed{"deployment-web": {policy: low, mode: vpav1.UpdateModeOff}})
	if after["deployment-web"].UID != before["deployment-web"].UID {
		t.Error("the VPA was replaced, not handed over")
	}
	e.waitForStatus(t, low, 1, 1, 1)
	e.waitForStatus(t, high, 1, 0, 1)
}

// TestNamespaceFlag: with --vpa-object-namespace the controller manages
// that namespace only, whatever the policy selects.
func TestNamespaceFlag(t *testing.T) {
	e := setup(t)
	a, b := e.namespace(t, true), e.namespace(t, true)
	e.c.CreateDeployment(t, a, framework.Workload{Name: "web"})
	e.c.CreateDeployment(t, b, framework.Workload{Name: "web"})
	pol := e.policyName("all")
	e.createPolicy(t, pol, 0, vpav1.UpdateModeOff, nil)
	e.run(t, "--vpa-object-namespace="+a)
	e.waitForVPAs(t, a, map[string]managed{"deployment-web": {policy: pol, mode: vpav1.UpdateModeOff}})
	e.waitForStatus(t, pol, 1, 1, 0)
	if vpas, err := e.vpas(b); err != nil || len(vpas) != 0 {
		t.Errorf("namespace %s, outside --vpa-object-namespace, has VPAs %v (%v)", b, slices.Collect(maps.Keys(vpas)), err)
	}
}

// TestValidation: the API server refuses a policy that names a kind twice,
// a priority out of range, and a kind that is not a kind's name.
func TestValidation(t *testing.T) {
	e := setup(t)
	valid := func() *policyv1alpha1.VerticalPodAutoscalerPolicy {
		return &policyv1alpha1.VerticalPodAutoscalerPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: e.policyName("invalid")},
			Spec: policyv1alpha1.VerticalPodAutoscalerPolicySpec{
				Template: policyv1alpha1.VerticalPodAutoscalerTemplate{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: mode(vpav1.UpdateModeOff)}},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*policyv1alpha1.VerticalPodAutoscalerPolicy)
		want   string
	}{
		{"a kind named twice", func(p *policyv1alpha1.VerticalPodAutoscalerPolicy) {
			p.Spec.Kinds = []policyv1alpha1.WorkloadKind{{APIGroup: "apps", Kind: "Deployment"}, {APIGroup: "apps", Kind: "Deployment"}}
		}, "each kind may be named once"},
		{"a priority out of range", func(p *policyv1alpha1.VerticalPodAutoscalerPolicy) { p.Spec.Priority = 5000 }, "spec.priority"},
		{"a kind that is not a kind", func(p *policyv1alpha1.VerticalPodAutoscalerPolicy) {
			p.Spec.Kinds = []policyv1alpha1.WorkloadKind{{APIGroup: "apps", Kind: "deployments"}}
		}, "spec.kinds[0].kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := valid()
			tc.change(p)
			_, err := e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Create(context.Background(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want Invalid naming %q", err, tc.want)
			}
		})
	}
	// The same kinds in other groups are different kinds.
	p := valid()
	p.Spec.Kinds = []policyv1alpha1.WorkloadKind{{APIGroup: "apps", Kind: "Deployment"}, {APIGroup: "example.com", Kind: "Deployment"}}
	if _, err := e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Create(context.Background(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("kinds of two groups: %v", err)
	}
}

// TestCustomKind: a policy naming a custom resource kind with the scale
// subresource gives its objects VPAs once the recommender may list and
// watch it (docs/policies.md: rbac.extraRules); a kind without the scale
// subresource is reported on the policy, not watched.
func TestCustomKind(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t, true)
	group := e.id + ".e2e.openvpa.io"
	// The grant a user adds for a custom kind, as the chart's rbac.extraRules does.
	grant := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: openvpa-e2e:%[1]s
rules:
- apiGroups: ["%[1]s"]
  resources: ["scalers", "plains"]
  verbs: ["list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: openvpa-e2e:%[1]s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "openvpa-e2e:%[1]s"}
subjects:
- {kind: ServiceAccount, name: vpa-recommender, namespace: kube-system}
`, group)
	path := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(path, []byte(framework.CustomKindCRD(group, "Scaler", "scalers", true)+"---\n"+framework.CustomKindCRD(group, "Plain", "plains", false)+"---\n"+grant), 0o600); err != nil {
		t.Fatal(err)
	}
	e.c.Kubectl(t, "apply", "-f", path)
	t.Cleanup(func() { _, _ = e.c.KubectlE("delete", "-f", path, "--wait=false") })
	e.c.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/scalers."+group, "crd/plains."+group)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "scalers"}
	framework.WaitFor(t, timeout, func() (bool, error) {
		_, err := e.c.Dynamic.Resource(gvr).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Scaler",
			"metadata": map[string]any{"name": "custom"},
			"spec":     map[string]any{"replicas": int64(1)},
		}}, metav1.CreateOptions{})
		return err == nil, err
	})

	pol := e.policyName("custom")
	e.createPolicy(t, pol, 0, vpav1.UpdateModeOff, nil)
	e.updatePolicy(t, pol, func(p *policyv1alpha1.VerticalPodAutoscalerPolicy) {
		p.Spec.Kinds = []policyv1alpha1.WorkloadKind{{APIGroup: group, Kind: "Scaler"}}
	})
	e.run(t)
	got := e.waitForVPAs(t, ns, map[string]managed{"scaler-custom": {policy: pol, mode: vpav1.UpdateModeOff}})
	if ref := got["scaler-custom"].Spec.TargetRef; ref.APIVersion != group+"/v1" || ref.Kind != "Scaler" || ref.Name != "custom" {
		t.Errorf("targetRef %+v", ref)
	}
	e.waitForStatus(t, pol, 1, 1, 0)

	// A kind without the scale subresource is refused, and its VPAs are kept.
	e.updatePolicy(t, pol, func(p *policyv1alpha1.VerticalPodAutoscalerPolicy) {
		p.Spec.Kinds = append(p.Spec.Kinds, policyv1alpha1.WorkloadKind{APIGroup: group, Kind: "Plain"})
	})
	framework.WaitFor(t, timeout, func() (bool, error) {
		p, err := e.vpa.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Get(context.Background(), pol, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, policyv1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != p.Generation || c.Reason != "KindNotWatched" || !strings.Contains(c.Message, "no scale subresource") {
			return false, fmt.Errorf("Ready %+v", c)
		}
		return true, nil
	})
	e.waitForVPAs(t, ns, map[string]managed{"scaler-custom": {policy: pol, mode: vpav1.UpdateModeOff}})
}
