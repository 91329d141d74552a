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

package pod

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	caches "github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/target"
)

// TestFinderSelectorCacheFollowsTargets checks that a cached selector is
// dropped when its Deployment is replaced by one with another selector.
func TestFinderSelectorCacheFollowsTargets(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	workloads, byKind := wellKnown(factory)
	resolver := target.NewResolver(workloads, nil, target.Options{})
	vpas := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{TargetRefIndex: TargetRefIndexFunc})
	finder := NewFinder(vpas, resolver, nil)
	if err := finder.CacheSelectorsOf(byKind); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())

	deployment := func(app string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	}
	if _, err := client.AppsV1().Deployments("ns").Create(ctx, deployment("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: ptr(true)}}}}
	if _, err := client.AppsV1().ReplicaSets("ns").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory.WaitForCacheSync(ctx.Done())
	if err := vpas.Add(&vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}); err != nil {
		t.Fatal(err)
	}
	pod := &Decoded{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"},
		OwnerReferences: []Owner{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr(true)}}}

	waitFor := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			// Between delete and create the owner chain is broken and
			// the finder errs.
			vpa, err := finder.ControllingVPA(ctx, pod)
			if err == nil && (vpa != nil) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod matched = %v (err %v), want %v", vpa != nil, err, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(true)
	waitFor(true) // now from the cache

	// Replace the Deployment with one that selects other pods.
	if err := client.AppsV1().Deployments("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AppsV1().Deployments("ns").Create(ctx, deployment("other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(false)
	// And back.
	if _, err := client.AppsV1().Deployments("ns").Update(ctx, deployment("web"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(true)
}

// TestDecodedController checks that the Finder picks the controlling owner
// of a decoded pod as target.ControllerOf (which Resolver.PodController
// uses) picks it from the pod.
func TestDecodedController(t *testing.T) {
	owner := func(kind string, controller *bool) Owner {
		return Owner{APIVersion: "apps/v1", Kind: kind, Name: kind + "-1", Controller: controller}
	}
	tests := map[string][]Owner{
		"no owners":          nil,
		"no controller":      {owner("ReplicaSet", nil), owner("StatefulSet", ptr(false))},
		"one controller":     {owner("Node", nil), owner("ReplicaSet", ptr(true))},
		"the last one wins":  {owner("ReplicaSet", ptr(true)), owner("StatefulSet", ptr(true)), owner("Job", ptr(false))},
		"controller first":   {owner("DaemonSet", ptr(true)), owner("Node", nil)},
		"empty owner fields": {{Controller: ptr(true)}},
	}
	for name, owners := range tests {
		t.Run(name, func(t *testing.T) {
			p := &Decoded{Namespace: "ns", OwnerReferences: owners}
			want := target.ControllerOf(p.Namespace, p.Pod(&corev1.Pod{}).OwnerReferences)
			got, ok := p.controller()
			if ok != (want != nil) || ok && got != *want {
				t.Errorf("controller %+v (%v), want %+v", got, ok, want)
			}
		})
	}
}

// wellKnown returns the informers of the well-known controllers registered
// on factory, by kind, and their indexers for target.NewResolver.
func wellKnown(factory informers.SharedInformerFactory) (target.IndexerWorkloads, map[string]caches.Informer) {
	byKind := map[string]caches.Informer{
		target.KindDeployment:            factory.Apps().V1().Deployments().Informer(),
		target.KindReplicaSet:            factory.Apps().V1().ReplicaSets().Informer(),
		target.KindStatefulSet:           factory.Apps().V1().StatefulSets().Informer(),
		target.KindDaemonSet:             factory.Apps().V1().DaemonSets().Informer(),
		target.KindJob:                   factory.Batch().V1().Jobs().Informer(),
		target.KindCronJob:               factory.Batch().V1().CronJobs().Informer(),
		target.KindReplicationController: factory.Core().V1().ReplicationControllers().Informer(),
	}
	idx := target.IndexerWorkloads{}
	for kind, inf := range byKind {
		idx[kind] = inf.GetIndexer()
	}
	return idx, byKind
}
