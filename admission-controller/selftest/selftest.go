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

// Package selftest checks, against a running cluster, that the admission
// webhook patches new pods: it creates a pod in server-side dry run
// (dryRun=All, so nothing is stored and nothing runs), which the API server
// still sends through the mutating webhooks, and looks for the annotation the
// admission controller adds to every pod a VPA controls (vpaUpdates). Either
// it uses a Deployment that a VPA already targets, or it creates a throwaway
// Deployment with no replicas and an Initial-mode VPA for it, and deletes both
// when done. `vpa-admission-controller selftest` runs it, and the chart's
// `helm test` pod runs that.
package selftest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/annotations"
)

// Pods creates pods (only in dry run here).
type Pods interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
}

// Deployments reads, creates and deletes Deployments.
type Deployments interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.Deployment, error)
	Create(ctx context.Context, d *appsv1.Deployment, opts metav1.CreateOptions) (*appsv1.Deployment, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// VPAs creates and deletes VerticalPodAutoscalers.
type VPAs interface {
	Create(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler, opts metav1.CreateOptions) (*vpav1.VerticalPodAutoscaler, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Clients are the namespace's clients the check uses.
type Clients struct {
	Pods        Pods
	Deployments Deployments
	VPAs        VPAs
}

// Config says what to check.
type Config struct {
	// Namespace is where the pod is created (and the throwaway objects).
	Namespace string
	// Deployment, when set, is an existing Deployment a VPA in mode
	// Initial, Recreate, InPlaceOrRecreate or Auto targets; the dry-run pod
	// is made from its template. Empty: a throwaway Deployment and VPA.
	Deployment string
	// Image is the throwaway Deployment's image (never pulled: it has no
	// replicas and the pod is a dry run).
	Image string
	// Timeout bounds the wait for the webhook to patch the pod (the VPA and
	// the Deployment reach the admission controller's caches first).
	Timeout time.Duration
	// Interval is the time between two attempts.
	Interval time.Duration
	// Clock measures the timeout; nil is the real clock.
	Clock clock.WithTicker
}

// ErrNotPatched is returned when the webhook did not patch the pod in time.
var ErrNotPatched = errors.New("the admission webhook did not patch the pod")

// Result is what the check saw: the VPA the webhook named and the annotation.
type Result struct {
	VPA        string
	VPAUpdates string
}

// Run runs the check and returns what the webhook added, or why it failed.
func Run(ctx context.Context, c Clients, cfg Config) (Result, error) {
	if cfg.Namespace == "" {
		return Result{}, errors.New("no namespace")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	logger := klog.FromContext(ctx)
	var d *appsv1.Deployment
	var vpaName string
	if cfg.Deployment != "" {
		var err error
		if d, err = c.Deployments.Get(ctx, cfg.Deployment, metav1.GetOptions{}); err != nil {
			return Result{}, fmt.Errorf("reading Deployment %s/%s: %w", cfg.Namespace, cfg.Deployment, err)
		}
	} else {
		var cleanup func()
		var err error
		d, vpaName, cleanup, err = throwaway(ctx, c, cfg)
		defer cleanup()
		if err != nil {
			return Result{}, err
		}
		logger.Info("Created a throwaway Deployment and VPA", "deployment", klog.KObj(d), "vpa", klog.KRef(cfg.Namespace, vpaName))
	}
	pod := podOf(d)
	deadline := cfg.Clock.Now().Add(cfg.Timeout)
	var last error
	for {
		got, err := c.Pods.Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err != nil:
			last = fmt.Errorf("creating a pod of %s in dry run: %w", d.Name, err)
		case got.Annotations[annotations.Updates] == "":
			last = fmt.Errorf("%w: pod of Deployment %s/%s has no %s annotation", ErrNotPatched, d.Namespace, d.Name, annotations.Updates)
		case vpaName != "" && !strings.Contains(got.Annotations[annotations.Updates], vpaName):
			last = fmt.Errorf("%w by VPA %s: %s is %q", ErrNotPatched, vpaName, annotations.Updates, got.Annotations[annotations.Updates])
		default:
			return Result{VPA: vpaName, VPAUpdates: got.Annotations[annotations.Updates]}, nil
		}
		logger.V(2).Info("Not patched yet", "err", last.Error())
		if !cfg.Clock.Now().Before(deadline) {
			return Result{}, fmt.Errorf("after %v: %w", cfg.Timeout, last)
		}
		t := cfg.Clock.NewTimer(cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-t.C():
		}
	}
}

// throwaway creates a Deployment without replicas and an Initial-mode VPA
// for it; cleanup deletes what was created, even after ctx ends.
func throwaway(ctx context.Context, c Clients, cfg Config) (*appsv1.Deployment, string, func(), error) {
	name := "vpa-selftest-" + rand.String(5)
	labels := map[string]string{"app.kubernetes.io/name": "vpa-selftest", "vpa-selftest": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cfg.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "selftest",
					Image: cfg.Image,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("10m"),
						corev1.ResourceMemory: resource.MustParse("16Mi"),
					}},
				}}},
			},
		},
	}
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	created, err := c.Deployments.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return nil, "", cleanup, fmt.Errorf("creating Deployment %s/%s: %w", cfg.Namespace, name, err)
	}
	undo = append(undo, func() { deleteLogged(ctx, "Deployment", name, c.Deployments.Delete) })
	mode := vpav1.UpdateModeInitial
	vpa := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cfg.Namespace, Labels: labels},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}
	if _, err := c.VPAs.Create(ctx, vpa, metav1.CreateOptions{}); err != nil {
		return nil, "", cleanup, fmt.Errorf("creating VPA %s/%s: %w", cfg.Namespace, name, err)
	}
	undo = append(undo, func() { deleteLogged(ctx, "VerticalPodAutoscaler", name, c.VPAs.Delete) })
	return created, name, cleanup, nil
}

// deleteLogged deletes an object with a fresh deadline, so that it goes even
// when ctx was cancelled, and logs a failure.
func deleteLogged(ctx context.Context, kind, name string, del func(context.Context, string, metav1.DeleteOptions) error) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := del(dctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Deleting a throwaway object", "kind", kind, "name", name)
	}
}

// podOf is a pod of d as its controller would make it, owned by d directly
// (the admission controller resolves a pod's topmost controller).
func podOf(d *appsv1.Deployment) *corev1.Pod {
	tmpl := d.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: d.Name + "-selftest-",
			Namespace:    d.Namespace,
			Labels:       tmpl.Labels,
			Annotations:  tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: tmpl.Spec,
	}
}
