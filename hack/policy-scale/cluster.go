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

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
	"github.com/openvpa/openvpa/hack/internal/benchenv"
)

const (
	// selectLabel on a namespace holds the name of the policy that selects it.
	selectLabel = "openvpa.io/policy-scale"
	// workloadLabel marks the Deployments, and through their pod template
	// their ReplicaSets.
	workloadLabel = "openvpa.io/policy-scale-workload"
)

// cluster is what the harness does on the API server with its own client.
type cluster struct {
	kube kubernetes.Interface
	vpas versioned.Interface
	c    config
}

// listNamespace is the namespace to list in: the only one, or all.
func (c config) listNamespace() string {
	if c.namespaces <= 1 {
		return c.namespace
	}
	return ""
}

// managedSelector selects the policy's managed VPAs.
func (c config) managedSelector() string {
	return policyv1alpha1.LabelManagedBy + "=" + policyv1alpha1.ManagedByPolicyController + "," + policyv1alpha1.LabelPolicy + "=" + c.policy
}

// preflight checks that the CRDs are served and warns of other policies.
func (cl *cluster) preflight(ctx context.Context) error {
	for _, gv := range []string{"autoscaling.k8s.io/v1", policyv1alpha1.SchemeGroupVersion.String()} {
		if _, err := cl.kube.Discovery().ServerResourcesForGroupVersion(gv); err != nil {
			return fmt.Errorf("%s is not served (kubectl apply --server-side -f deploy/crds): %w", gv, err)
		}
	}
	l, err := cl.vpas.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing policies: %w", err)
	}
	for _, p := range l.Items {
		if p.Name != cl.c.policy {
			logf("warning: policy %s exists too; the controller plans it with ours", p.Name)
		}
	}
	return nil
}

func (cl *cluster) createNamespaces(ctx context.Context) error {
	nss := cl.c.namespaceList()
	logf("creating %d namespace(s) %s ... with %d Deployments", len(nss), nss[0], cl.c.workloads)
	for _, ns := range nss {
		_, err := cl.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns, Labels: map[string]string{selectLabel: cl.c.policy},
		}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s exists: delete it, pass --reuse or another --namespace", ns)
		}
		if err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	return nil
}

func (cl *cluster) deleteNamespaces(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	logf("deleting the namespaces (in the background on the server)")
	for _, ns := range cl.c.namespaceList() {
		if err := cl.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("deleting namespace %s: %v", ns, err)
		}
	}
}

// createDeployments creates the Deployments with a few workers.
func (cl *cluster) createDeployments(ctx context.Context) error {
	const workers = 16
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idx := make(chan int)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range idx {
				if err := cl.createDeployment(ctx, i); err != nil {
					errs[w] = err
					cancel()
					return
				}
			}
		})
	}
	start := time.Now()
feed:
	for i := range cl.c.workloads {
		select {
		case idx <- i:
		case <-ctx.Done():
			break feed
		}
		if (i+1)%1000 == 0 {
			logf("created %d/%d Deployments", i+1, cl.c.workloads)
		}
	}
	close(idx)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	logf("created %d Deployments in %s", cl.c.workloads, time.Since(start).Round(time.Second))
	return nil
}

func (cl *cluster) createDeployment(ctx context.Context, i int) error {
	name := fmt.Sprintf("app-%05d", i)
	ns := cl.c.namespaceOf(i)
	labels := map[string]string{"app": name, workloadLabel: "true"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{workloadLabel: "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("100Mi"),
					}},
				}}},
			},
		},
	}
	if _, err := cl.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Deployment %s/%s: %w", ns, name, err)
	}
	return nil
}

// waitWorkloads waits until every Deployment is observed by the controller
// manager and has its ReplicaSet, so that the caches the recommender fills
// at its start hold everything and no longer change.
func (cl *cluster) waitWorkloads(ctx context.Context) error {
	want := cl.c.workloads
	sel := metav1.ListOptions{LabelSelector: workloadLabel + "=true", ResourceVersion: "0"}
	last := time.Time{}
	return waitUntil(ctx, 5*time.Second, func() (bool, error) {
		ds, err := cl.kube.AppsV1().Deployments(cl.c.listNamespace()).List(ctx, sel)
		if err != nil {
			return false, fmt.Errorf("listing Deployments: %w", err)
		}
		rss, err := cl.kube.AppsV1().ReplicaSets(cl.c.listNamespace()).List(ctx, sel)
		if err != nil {
			return false, fmt.Errorf("listing ReplicaSets: %w", err)
		}
		observed := 0
		for i := range ds.Items {
			if ds.Items[i].Status.ObservedGeneration >= ds.Items[i].Generation {
				observed++
			}
		}
		done := len(ds.Items) == want && observed == want && len(rss.Items) == want
		if done || time.Since(last) > 15*time.Second {
			logf("Deployments %d/%d, observed by the controller manager %d, ReplicaSets %d", len(ds.Items), want, observed, len(rss.Items))
			last = time.Now()
		}
		return done, nil
	})
}

// clean removes the policy and any managed VPA a kept run left.
func (cl *cluster) clean(ctx context.Context) error {
	logf("reusing the Deployments of %s ...; removing policy %s and its VPAs", cl.c.namespaceList()[0], cl.c.policy)
	if err := cl.deletePolicy(ctx); err != nil {
		return err
	}
	for _, ns := range cl.c.namespaceList() {
		err := cl.vpas.AutoscalingV1().VerticalPodAutoscalers(ns).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: policyv1alpha1.LabelManagedBy})
		if err != nil {
			return fmt.Errorf("deleting the managed VPAs of %s: %w", ns, err)
		}
	}
	return waitUntil(ctx, 2*time.Second, func() (bool, error) {
		l, err := cl.vpas.AutoscalingV1().VerticalPodAutoscalers(cl.c.listNamespace()).List(ctx,
			metav1.ListOptions{LabelSelector: policyv1alpha1.LabelManagedBy})
		if err != nil {
			return false, err
		}
		return len(l.Items) == 0, nil
	})
}

// createPolicy creates the policy over the namespaces, mode Off.
func (cl *cluster) createPolicy(ctx context.Context) (*policyv1alpha1.VerticalPodAutoscalerPolicy, error) {
	off := vpav1.UpdateModeOff
	p := &policyv1alpha1.VerticalPodAutoscalerPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: cl.c.policy},
		Spec: policyv1alpha1.VerticalPodAutoscalerPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{selectLabel: cl.c.policy}},
			Template:          policyv1alpha1.VerticalPodAutoscalerTemplate{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &off}},
		},
	}
	out, err := cl.vpas.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating policy %s: %w", cl.c.policy, err)
	}
	return out, nil
}

func (cl *cluster) getPolicy(ctx context.Context) (*policyv1alpha1.VerticalPodAutoscalerPolicy, error) {
	return cl.vpas.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies().Get(ctx, cl.c.policy, metav1.GetOptions{})
}

// deletePolicy deletes the policy and waits until it is gone.
func (cl *cluster) deletePolicy(ctx context.Context) error {
	api := cl.vpas.OpenvpaV1alpha1().VerticalPodAutoscalerPolicies()
	if err := api.Delete(ctx, cl.c.policy, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting policy %s: %w", cl.c.policy, err)
	}
	return waitUntil(ctx, time.Second, func() (bool, error) {
		_, err := api.Get(ctx, cl.c.policy, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// managedVersions lists the policy's VPAs from the API server: name to
// resource version.
func (cl *cluster) managedVersions(ctx context.Context) (map[string]string, error) {
	l, err := cl.vpas.AutoscalingV1().VerticalPodAutoscalers(cl.c.listNamespace()).List(ctx,
		metav1.ListOptions{LabelSelector: cl.c.managedSelector()})
	if err != nil {
		return nil, fmt.Errorf("listing the managed VPAs: %w", err)
	}
	out := make(map[string]string, len(l.Items))
	for _, v := range l.Items {
		out[v.Namespace+"/"+v.Name] = v.ResourceVersion
	}
	return out, nil
}

// namespaceList returns the run's namespaces.
func (c config) namespaceList() []string { return benchenv.Namespaces(c.namespace, c.namespaces) }

// namespaceOf returns the namespace of Deployment i.
func (c config) namespaceOf(i int) string { return benchenv.NamespaceOf(c.namespace, c.namespaces, i) }
