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

package updater

import (
	"context"
	"fmt"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/boost"
)

const boostGate = "--feature-gates=CPUStartupBoost=true"

func factor(f int32, seconds int32) *vpav1.StartupBoost {
	return &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.FactorStartupBoostType, Factor: &f, DurationSeconds: &seconds}}
}

func quantity(q string) *vpav1.StartupBoost {
	v := resource.MustParse(q)
	return &vpav1.StartupBoost{CPU: &vpav1.GenericStartupBoost{Type: vpav1.QuantityStartupBoostType, Quantity: &v}}
}

func withBoost(b *vpav1.StartupBoost) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) { v.Spec.StartupBoost = b }
}

func withPolicy(p vpav1.ContainerResourcePolicy) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) {
		if v.Spec.ResourcePolicy == nil {
			v.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{}
		}
		v.Spec.ResourcePolicy.ContainerPolicies = append(v.Spec.ResourcePolicy.ContainerPolicies, p)
	}
}

// createBoostVPA creates a VPA for Deployment name with recommendations of
// target for each named container.
func (e *env) createBoostVPA(t *testing.T, name string, mode vpav1.UpdateMode, target corev1.ResourceList, containers []string, opts ...vpaOpt) {
	t.Helper()
	ctx := context.Background()
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}
	for _, o := range opts {
		o(v)
	}
	created, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(ctx, v, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Recommendation = &vpav1.RecommendedPodResources{}
	for _, c := range containers {
		created.Status.Recommendation.ContainerRecommendations = append(created.Status.Recommendation.ContainerRecommendations,
			vpav1.RecommendedContainerResources{ContainerName: c, Target: target, LowerBound: target, UpperBound: target, UncappedTarget: target})
	}
	if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// boostedProbe waits until a dry-run pod of the deployment carries the boost
// annotation of container marked and passes seen (the admission controller has
// the VPA's status, not only its spec; see admittedPod), and returns it. seen
// may be nil where the pod is the same either way.
func (e *env) boostedProbe(t *testing.T, deployment, marked string, seen func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	return e.admittedPod(t, deployment, func(p *corev1.Pod) error {
		if _, ok := p.Annotations[boost.Annotation(marked)]; !ok {
			return fmt.Errorf("pod has no %s annotation yet: %v", boost.Annotation(marked), p.Annotations)
		}
		if seen == nil {
			return nil
		}
		return seen(p)
	})
}

// requests is a seen check of boostedProbe: container name requests want.
func requests(name string, want corev1.ResourceList) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error { return containerRequests(p, name, want) }
}

func container(p *corev1.Pod, name string) corev1.Container {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	return corev1.Container{}
}

func assertCPU(t *testing.T, what string, got corev1.ResourceList, want string) {
	t.Helper()
	if q, ok := got[corev1.ResourceCPU]; !ok || q.Cmp(resource.MustParse(want)) != 0 {
		t.Errorf("%s cpu = %v, want %s", what, got, want)
	}
}

// TestStartupBoostAtAdmission covers upstream's admission scenarios of the
// CPUStartupBoost feature: boost by factor, by quantity, in Off mode, and not
// for a container whose mode is Off.
func TestStartupBoostAtAdmission(t *testing.T) {
	e := setup(t)
	e.runAdmissionController(t, boostGate)
	app := func(name string) framework.Workload {
		return framework.Workload{Name: name, Containers: []framework.Container{
			{Name: "app", Requests: framework.Resources("100m", "100Mi"), Limits: framework.Resources("200m", "")},
		}}
	}

	t.Run("boosts CPU by factor on pod creation", func(t *testing.T) {
		e.c.CreateDeployment(t, e.ns, app("factor"))
		e.createBoostVPA(t, "factor", vpav1.UpdateModeRecreate, framework.Resources("250m", "200Mi"), []string{"app"}, withBoost(factor(3, 0)))
		// The recommended memory (the boost leaves memory alone) shows that
		// the webhook has the status; then the boost must start from the
		// recommended CPU.
		p := e.boostedProbe(t, "factor", "app", requests("app", framework.Resources("", "200Mi")))
		c := container(p, "app")
		assertCPU(t, "request", c.Resources.Requests, "750m")
		assertCPU(t, "limit", c.Resources.Limits, "1500m")
		if got, want := p.Annotations[boost.Annotation("app")], `{"requests":{"cpu":"100m","memory":"100Mi"},"limits":{"cpu":"200m"}}`; got != want {
			t.Errorf("boost annotation %s, want %s", got, want)
		}
	})

	t.Run("boosts CPU by quantity", func(t *testing.T) {
		e.c.CreateDeployment(t, e.ns, app("quantity"))
		e.createBoostVPA(t, "quantity", vpav1.UpdateModeInitial, framework.Resources("250m", "200Mi"), []string{"app"}, withBoost(quantity("1")))
		c := container(e.boostedProbe(t, "quantity", "app", requests("app", framework.Resources("", "200Mi"))), "app")
		assertCPU(t, "request", c.Resources.Requests, "1250m")
		assertCPU(t, "limit", c.Resources.Limits, "2500m")
	})

	t.Run("boosts CPU when the update mode is Off", func(t *testing.T) {
		e.c.CreateDeployment(t, e.ns, app("off"))
		e.createBoostVPA(t, "off", vpav1.UpdateModeOff, framework.Resources("250m", "200Mi"), []string{"app"}, withBoost(factor(2, 0)))
		// Off: the webhook boosts the container's own request and never
		// applies the recommendation, so the pod is the same whether or not
		// it has the status yet.
		c := container(e.boostedProbe(t, "off", "app", nil), "app")
		assertCPU(t, "request", c.Resources.Requests, "200m")
		assertCPU(t, "limit", c.Resources.Limits, "400m")
		if m := c.Resources.Requests[corev1.ResourceMemory]; m.Cmp(resource.MustParse("100Mi")) != 0 {
			t.Errorf("memory request %s in Off mode, want the pod's own 100Mi", m.String())
		}
	})

	t.Run("does not boost a container whose mode is Off", func(t *testing.T) {
		w := framework.Workload{Name: "mixed", Containers: []framework.Container{
			{Name: "app", Requests: framework.Resources("100m", "100Mi")},
			{Name: "side", Requests: framework.Resources("100m", "100Mi")},
		}}
		e.c.CreateDeployment(t, e.ns, w)
		e.createBoostVPA(t, "mixed", vpav1.UpdateModeRecreate, framework.Resources("300m", "150Mi"), []string{"app", "side"}, withBoost(factor(2, 0)),
			withPolicy(vpav1.ContainerResourcePolicy{ContainerName: "app", Mode: ptr.To(vpav1.ContainerScalingModeOff)}))
		// side's boost and recommended memory show the webhook has the VPA
		// and its status.
		p := e.boostedProbe(t, "mixed", "side", requests("side", framework.Resources("", "150Mi")))
		assertCPU(t, "side request", container(p, "side").Resources.Requests, "600m")
		assertCPU(t, "app request", container(p, "app").Resources.Requests, "100m")
		if v, ok := p.Annotations[boost.Annotation("app")]; ok {
			t.Errorf("container app, mode Off, was marked boosted: %s", v)
		}
	})
}

// TestStartupBoostEndsInPlaceWhenReady covers upstream's "unboosts pods when
// they become Ready": pods are boosted at creation, stay boosted while not
// Ready and for the boost's duration after, and are then resized in place to
// the recommendation (or, in Off mode, back to their own requests).
func TestStartupBoostEndsInPlaceWhenReady(t *testing.T) {
	e := setup(t)
	e.runAdmissionController(t, boostGate)
	const duration = 4 * time.Second
	cases := []struct {
		name     string
		mode     vpav1.UpdateMode
		replicas int32
		boosted  string
		want     string
		duration int32
	}{
		{name: "initial", mode: vpav1.UpdateModeInitial, replicas: 2, boosted: "600m", want: "300m", duration: int32(duration / time.Second)},
		{name: "off", mode: vpav1.UpdateModeOff, replicas: 2, boosted: "200m", want: "100m"},
		// Fewer replicas than --min-replicas (2): the boost still ends.
		{name: "single", mode: vpav1.UpdateModeInitial, replicas: 1, boosted: "600m", want: "300m"},
	}
	for _, tc := range cases {
		e.c.CreateDeployment(t, e.ns, framework.Workload{Name: tc.name, Replicas: tc.replicas, ReadyAfter: 8 * time.Second,
			Containers: []framework.Container{{Name: "app", Requests: framework.Resources("100m", "100Mi")}}})
		e.createBoostVPA(t, tc.name, tc.mode, framework.Resources("300m", "100Mi"), []string{"app"}, withBoost(factor(2, tc.duration)))
		// New pods get the boost of the recommendation from now on.
		e.boostedProbe(t, tc.name, "app", requests("app", framework.Resources(tc.boosted, "")))
		// Replace the pods created before the webhook knew the VPA.
		if err := e.c.Client.CoreV1().Pods(e.ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
			metav1.ListOptions{LabelSelector: "app=" + tc.name}); err != nil {
			t.Fatal(err)
		}
	}
	// Before the updater runs, every new pod runs boosted and is not Ready yet.
	originals := map[string]map[string]bool{}
	for _, tc := range cases {
		pods := e.c.WaitForPods(t, e.ns, "app="+tc.name, int(tc.replicas), func(p *corev1.Pod) bool {
			_, marked := p.Annotations[boost.Annotation("app")]
			return framework.PodRunning(p) && marked
		})
		originals[tc.name] = map[string]bool{}
		for _, p := range pods {
			assertCPU(t, tc.name+" boosted request", container(&p, "app").Resources.Requests, tc.boosted)
			originals[tc.name][string(p.UID)] = true
		}
	}
	p := e.runUpdater(t, boostGate)
	for _, tc := range cases {
		want := resource.MustParse(tc.want)
		framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
			pods := e.pods(t, tc.name)
			done := 0
			for _, pod := range pods {
				if !originals[tc.name][string(pod.UID)] {
					t.Fatalf("%s: pod %s is new: the boost must end in place\n%s", tc.name, pod.Name, p.Log())
				}
				req := container(&pod, "app").Resources.Requests[corev1.ResourceCPU]
				if req.Cmp(want) != 0 {
					continue
				}
				// Unboosted: only once Ready, and not before the duration.
				var ready *corev1.PodCondition
				for i := range pod.Status.Conditions {
					if pod.Status.Conditions[i].Type == corev1.PodReady {
						ready = &pod.Status.Conditions[i]
					}
				}
				if ready == nil || ready.Status != corev1.ConditionTrue {
					t.Fatalf("%s: pod %s was unboosted before it was Ready\n%s", tc.name, pod.Name, p.Log())
				}
				if since := time.Since(ready.LastTransitionTime.Time); since < time.Duration(tc.duration)*time.Second {
					t.Fatalf("%s: pod %s was unboosted %v after Ready, before the boost's %ds\n%s", tc.name, pod.Name, since, tc.duration, p.Log())
				}
				if _, ok := pod.Annotations[boost.Annotation("app")]; ok {
					return false, fmt.Errorf("pod %s resized, annotation not yet removed", pod.Name)
				}
				for _, st := range pod.Status.ContainerStatuses {
					if st.Resources != nil && st.Resources.Requests.Cpu().Cmp(want) == 0 {
						done++
					}
				}
			}
			if done < int(tc.replicas) {
				return false, fmt.Errorf("%s: %d of %d pods unboosted to %s", tc.name, done, tc.replicas, tc.want)
			}
			return true, nil
		})
	}
	e.waitForEvents(t, map[string]int{"InPlaceResizedByVPA": 5})
}

// TestStartupBoostDurationsPerContainer covers upstream's "CPUStartupBoost
// with different durations for different containers": a container policy's
// boost (and its duration) wins over the VPA's, and each container's boost
// ends on its own time.
func TestStartupBoostDurationsPerContainer(t *testing.T) {
	e := setup(t)
	e.runAdmissionController(t, boostGate)
	const slowFor = 6 * time.Second
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "pair", Replicas: 2, ReadyAfter: 2 * time.Second,
		Containers: []framework.Container{
			{Name: "fast", Requests: framework.Resources("100m", "100Mi")},
			{Name: "slow", Requests: framework.Resources("100m", "100Mi")},
		}})
	e.createBoostVPA(t, "pair", vpav1.UpdateModeInitial, framework.Resources("300m", "100Mi"), []string{"fast", "slow"},
		withBoost(factor(2, 0)),
		withPolicy(vpav1.ContainerResourcePolicy{ContainerName: "slow", StartupBoost: factor(3, int32(slowFor/time.Second))}))
	e.boostedProbe(t, "pair", "slow", func(p *corev1.Pod) error {
		if err := containerRequests(p, "fast", framework.Resources("600m", "")); err != nil {
			return err
		}
		return containerRequests(p, "slow", framework.Resources("900m", ""))
	})
	if err := e.c.Client.CoreV1().Pods(e.ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
		metav1.ListOptions{LabelSelector: "app=pair"}); err != nil {
		t.Fatal(err)
	}
	pods := e.c.WaitForPods(t, e.ns, "app=pair", 2, func(p *corev1.Pod) bool {
		_, marked := p.Annotations[boost.Annotation("slow")]
		return framework.PodRunning(p) && marked
	})
	for _, p := range pods {
		assertCPU(t, "fast boosted request", container(&p, "fast").Resources.Requests, "600m")
		assertCPU(t, "slow boosted request", container(&p, "slow").Resources.Requests, "900m")
	}
	p := e.runUpdater(t, boostGate)
	// fast's boost ends at Ready, slow's 6 s later: some pod shows one without the other.
	sawSplit := false
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		done := 0
		for _, pod := range e.pods(t, "pair") {
			fast := container(&pod, "fast").Resources.Requests[corev1.ResourceCPU]
			slow := container(&pod, "slow").Resources.Requests[corev1.ResourceCPU]
			if fast.Cmp(resource.MustParse("300m")) == 0 && slow.Cmp(resource.MustParse("900m")) == 0 {
				sawSplit = true
			}
			if slow.Cmp(resource.MustParse("300m")) != 0 {
				continue
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady && time.Since(c.LastTransitionTime.Time) < slowFor {
					t.Fatalf("pod %s: slow unboosted %v after Ready, before its %v\n%s", pod.Name, time.Since(c.LastTransitionTime.Time), slowFor, p.Log())
				}
			}
			if fast.Cmp(resource.MustParse("300m")) == 0 && len(boost.Containers(&pod)) == 0 {
				done++
			}
		}
		if done < 2 {
			return false, fmt.Errorf("%d of 2 pods fully unboosted", done)
		}
		return true, nil
	})
	if !sawSplit {
		t.Errorf("no pod was seen with fast unboosted and slow still boosted\n%s", p.Log())
	}
}
