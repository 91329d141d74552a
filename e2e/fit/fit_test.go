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

// Package fit checks that recommendations fit against the local control
// plane: the recommender caps a recommendation to the largest KWOK node the
// pods may use (its own nodes, labelled and tainted for the test, with a
// DaemonSet on them) and lifts the cap when a larger node comes; the
// admission controller caps the increase a new pod gets to what the
// namespace's ResourceQuota leaves, so that the pods are created.
package fit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

// poolKey labels and taints the nodes a test creates, with the test's
// namespace as the value, so that only its own pods (which select and
// tolerate it) use them and its pods use no other node.
const poolKey = "openvpa.io/e2e-fit-pool"

func rl(cpu, mem string) corev1.ResourceList { return framework.Resources(cpu, mem) }

// createNode creates a KWOK node (kwok makes it Ready and runs the pods
// bound to it) in the test's pool with the given allocatable, and deletes
// it when the test ends.
func createNode(t *testing.T, c *framework.Cluster, pool, name, cpu, memory string, extraTaints ...corev1.Taint) {
	t.Helper()
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourcePods: resource.MustParse("110")}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":                   "fake",
				"node.alpha.kubernetes.io/ttl":         "0",
				"metrics.k8s.io/resource-metrics-path": "/metrics/nodes/" + name + "/metrics/resource",
			},
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", poolKey: pool},
		},
		Spec: corev1.NodeSpec{Taints: append([]corev1.Taint{{Key: poolKey, Value: pool, Effect: corev1.TaintEffectNoSchedule}}, extraTaints...)},
		Status: corev1.NodeStatus{
			Allocatable: alloc, Capacity: alloc,
			NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
	if _, err := c.Client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() {
		err := c.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", name, err)
		}
	})
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		got, err := c.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// onPool makes a pod spec select and tolerate the test's pool.
func onPool(spec *corev1.PodSpec, pool string) {
	spec.NodeSelector = map[string]string{poolKey: pool}
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: poolKey, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule})
}

// TestRecommendationCappedToLargestNode: a workload using more cpu than any
// node of its pool holds gets a target that fits the largest eligible node
// (allocatable less its DaemonSet pod; a larger node it does not tolerate
// does not count), with RecommendationCappedToNode naming the node; when a
// larger node joins the pool, the cap goes.
func TestRecommendationCappedToLargestNode(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "recommender")
	ns := c.NewNamespace(t)
	ctx := context.Background()
	vpas := vpaclient.NewForConfigOrDie(c.Config)

	createNode(t, c, ns, ns+"-small", "2", "4Gi")
	createNode(t, c, ns, ns+"-medium", "4", "8Gi")
	createNode(t, c, ns, ns+"-tainted", "64", "128Gi", corev1.Taint{Key: "openvpa.io/e2e-fit-reserved", Value: "true", Effect: corev1.TaintEffectNoSchedule})

	// A DaemonSet on the pool's nodes: its pods' requests are not the
	// workload's to have.
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: framework.DefaultImage,
					Resources: corev1.ResourceRequirements{Requests: rl("500m", "512Mi")}}}},
			},
		},
	}
	onPool(&ds.Spec.Template.Spec, ns)
	if _, err := c.Client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitForPods(t, ns, "app=agent", 2, framework.PodRunning) // small and medium, not the tainted node

	web := framework.Workload{Name: "web", Usage: framework.Usage{CPU: "6", Memory: "100Mi"}}.Deployment(ns)
	onPool(&web.Spec.Template.Spec, ns)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitForPods(t, ns, "app=web", 1, framework.PodRunning)
	mode := vpav1.UpdateModeOff
	if _, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Create(ctx, &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.RunComponent(t, framework.Component{
		Binary: c.BuildBinary(t, "./recommender"),
		Args: []string{"--recommender-interval=5s", "--checkpoints-gc-interval=10s", "--checkpoints-write-interval=5s",
			"--address=127.0.0.1:0", "--v=3", "--vpa-object-namespace=" + ns},
		ServiceAccount: "kube-system/vpa-recommender",
	})

	// medium: 4 cores less the DaemonSet pod's 500m.
	medium := ns + "-medium"
	v := waitVPA(t, vpas, ns, "web", func(v *vpav1.VerticalPodAutoscaler) error {
		r := containerRec(v, "app")
		if r == nil {
			return fmt.Errorf("no recommendation yet")
		}
		cond := framework.Condition(v, vpav1.RecommendationCappedToNode)
		if cond == nil || cond.Status != corev1.ConditionTrue {
			return fmt.Errorf("RecommendationCappedToNode = %+v", cond)
		}
		if got := r.Target[corev1.ResourceCPU]; got.Cmp(resource.MustParse("3500m")) != 0 {
			return fmt.Errorf("target cpu %s, want 3500m", got.String())
		}
		return nil
	})
	r := containerRec(v, "app")
	uncapped := r.UncappedTarget[corev1.ResourceCPU]
	if uncapped.Cmp(resource.MustParse("4")) <= 0 {
		t.Errorf("uncapped target cpu %s: want the usage's, above every eligible node", uncapped.String())
	}
	if up := r.UpperBound[corev1.ResourceCPU]; up.Cmp(resource.MustParse("3500m")) > 0 {
		t.Errorf("upper bound cpu %s above the node", up.String())
	}
	cond := framework.Condition(v, vpav1.RecommendationCappedToNode)
	if !strings.Contains(cond.Message, "node "+medium) || !strings.Contains(cond.Message, "cpu "+uncapped.String()) {
		t.Errorf("RecommendationCappedToNode message %q does not name node %s and the uncapped cpu %s", cond.Message, medium, uncapped.String())
	}

	// A larger node in the pool lifts the cap at a next loop.
	createNode(t, c, ns, ns+"-large", "16", "32Gi")
	waitVPA(t, vpas, ns, "web", func(v *vpav1.VerticalPodAutoscaler) error {
		if cond := framework.Condition(v, vpav1.RecommendationCappedToNode); cond != nil {
			return fmt.Errorf("RecommendationCappedToNode still %+v", cond)
		}
		r := containerRec(v, "app")
		if got, want := r.Target[corev1.ResourceCPU], r.UncappedTarget[corev1.ResourceCPU]; got.Cmp(want) != 0 {
			return fmt.Errorf("target cpu %s, uncapped %s", got.String(), want.String())
		}
		return nil
	})
}

// TestQuotaCapsAdmissionPatch: with a ResourceQuota that leaves little
// room, the admission controller caps the increase each new pod gets (and
// keeps room for one more pod with its own requests), so every pod is
// created: none is refused where its own requests would have passed, and
// the ReplicaSet records no FailedCreate.
func TestQuotaCapsAdmissionPatch(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "admission-controller")
	ns := c.NewNamespace(t)
	ctx := context.Background()
	vpas := vpaclient.NewForConfigOrDie(c.Config)

	cpuQuota(t, c, ns, "1500m")

	web := framework.Workload{Name: "web", Containers: []framework.Container{{Name: "app", Requests: rl("500m", "64Mi")}}}.Deployment(ns)
	web.Spec.Replicas = ptr.To[int32](0)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mode := vpav1.UpdateModeInitial
	created, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Create(ctx, &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target := rl("2", "64Mi") // 4 × the pod's own cpu: more than the quota holds
	created.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
		{ContainerName: "app", Target: target, LowerBound: target, UpperBound: target, UncappedTarget: target},
	}}
	if _, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.StartScopedAdmission(t, ns)

	// The quota leaves 1500m; the pod asks 500m of its own, and room for
	// one more such pod is kept: 1000m.
	waitDryRunCPU(t, c, ns, "1")
	scale(t, c, ns, "web", 1)
	first := c.WaitForPods(t, ns, "app=web", 1, func(*corev1.Pod) bool { return true })[0]
	if got := first.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("first pod's cpu request %s, want 1 (the quota's room less one pod's own)", got.String())
	}
	if note := first.Annotations[annotations.Updates]; !strings.Contains(note, recommendation.NoteQuota) {
		t.Errorf("vpaUpdates %q does not say the quota capped it", note)
	}

	// 500m left: the next pod keeps its own 500m, which the quota admits
	// (with the recommendation's 2 cores it would be refused).
	waitDryRunCPU(t, c, ns, "500m")
	scale(t, c, ns, "web", 2)
	pods := c.WaitForPods(t, ns, "app=web", 2, func(*corev1.Pod) bool { return true })
	for _, p := range pods {
		if p.Name == first.Name {
			continue
		}
		if got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("500m")) != 0 {
			t.Errorf("second pod's cpu request %s, want its own 500m", got.String())
		}
	}

	evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conflict := false
	for _, e := range evs.Items {
		if e.Reason == "FailedCreate" {
			t.Errorf("event FailedCreate on %s: %s", e.InvolvedObject.Name, e.Message)
		}
		conflict = conflict || e.Reason == recommendation.ReasonResourceQuotaConflict && e.InvolvedObject.Kind == "VerticalPodAutoscaler"
	}
	if !conflict {
		// Events are recorded in the background: give them a moment.
		framework.WaitFor(t, 30*time.Second, func() (bool, error) {
			evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + recommendation.ReasonResourceQuotaConflict})
			return err == nil && len(evs.Items) > 0, err
		})
	}
}

// TestUpdaterDoesNotEvictIntoQuotaRefusal: the namespace's quota leaves
// 100m of cpu beside two running pods of 200m, and a Recreate VPA
// recommends twice their cpu. A replacement would not fit while the
// evicted pod is still charged, so the updater reports ResourceQuotaConflict
// and evicts none: the pods stay the same, and the ReplicaSet never fails
// to create one.
func TestUpdaterDoesNotEvictIntoQuotaRefusal(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "admission-controller")
	c.ApplyRBAC(t, "updater")
	ns := c.NewNamespace(t)
	ctx := context.Background()
	vpas := vpaclient.NewForConfigOrDie(c.Config)

	cpuQuota(t, c, ns, "500m")
	c.CreateDeployment(t, ns, framework.Workload{Name: "web", Replicas: 2, Containers: []framework.Container{{Name: "app", Requests: rl("200m", "64Mi")}}})
	pods := c.WaitForPods(t, ns, "app=web", 2, framework.PodRunning)
	before := map[string]bool{}
	for _, p := range pods {
		before[string(p.UID)] = true
	}

	mode := vpav1.UpdateModeRecreate
	created, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Create(ctx, &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.StartScopedAdmission(t, ns)
	upd := c.RunComponent(t, framework.Component{
		Binary: c.BuildBinary(t, "./updater"),
		Args: []string{"--vpa-object-namespace=" + ns, "--updater-interval=2s", "--address=127.0.0.1:0",
			"--admission-controller-status-lease-namespace=" + ns, "--v=4"},
		ServiceAccount: "kube-system/vpa-updater",
	})
	// The updater's quota cache is not waited for: let it run a few loops
	// before the VPA recommends anything.
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		if exited, err := upd.Exited(); exited {
			return false, fmt.Errorf("updater exited: %v", err)
		}
		return strings.Count(upd.Log(), "Updater loop done") >= 3, nil
	})
	target := rl("400m", "64Mi")
	created.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
		{ContainerName: "app", Target: target, LowerBound: target, UpperBound: target, UncappedTarget: target},
	}}
	if _, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The updater's own event says the quota stopped it.
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + recommendation.ReasonResourceQuotaConflict})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Source.Component == "vpa-updater" || e.ReportingController == "vpa-updater" {
				return true, nil
			}
		}
		return false, nil
	})
	after, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != len(before) {
		t.Errorf("%d pods, want the %d there were", len(after.Items), len(before))
	}
	for _, p := range after.Items {
		if !before[string(p.UID)] || p.DeletionTimestamp != nil {
			t.Errorf("pod %s (%s) is new or going: the updater evicted one", p.Name, p.UID)
		}
	}
	evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == "FailedCreate" || e.Reason == "EvictedByVPA" || e.Reason == "EvictedPod" {
			t.Errorf("event %s on %s: %s", e.Reason, e.InvolvedObject.Name, e.Message)
		}
	}
}

// waitDryRunCPU waits until a new pod of Deployment web, created as a dry
// run, gets the cpu request want: the admission controller's caches have
// seen the VPA and the quota's usage.
func waitDryRunCPU(t *testing.T, c *framework.Cluster, ns, want string) {
	t.Helper()
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		p, err := c.DryRunPod(ns, "web")
		if err != nil {
			return false, nil
		}
		got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		if got.Cmp(resource.MustParse(want)) != 0 {
			return false, fmt.Errorf("a new pod gets cpu %s, want %s", got.String(), want)
		}
		return true, nil
	})
}

func scale(t *testing.T, c *framework.Cluster, ns, name string, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := c.Client.AppsV1().Deployments(ns).Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitVPA(t *testing.T, vpas vpaclient.Interface, ns, name string, check func(*vpav1.VerticalPodAutoscaler) error) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	var v *vpav1.VerticalPodAutoscaler
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		got, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v = got
		if err := check(got); err != nil {
			return false, err
		}
		return true, nil
	})
	return v
}

func containerRec(v *vpav1.VerticalPodAutoscaler, name string) *vpav1.RecommendedContainerResources {
	if v.Status.Recommendation == nil {
		return nil
	}
	for i := range v.Status.Recommendation.ContainerRecommendations {
		if r := &v.Status.Recommendation.ContainerRecommendations[i]; r.ContainerName == name {
			return r
		}
	}
	return nil
}

// cpuQuota creates the ResourceQuota "team" with hard requests.cpu in ns,
// and waits until the quota controller has filled in its status: quota
// admission refuses pods until then.
func cpuQuota(t *testing.T, c *framework.Cluster, ns, hard string) {
	t.Helper()
	ctx := context.Background()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(hard)}},
	}
	if _, err := c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		q, err := c.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "team", metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) > 0, err
	})
}
