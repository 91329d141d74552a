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

package selftest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	vpafake "github.com/openvpa/openvpa/apis/generated/clientset/versioned/fake"
	"github.com/openvpa/openvpa/pkg/annotations"
)

const ns = "openvpa-system"

// webhook stands in for the API server and the admission webhook: a pod
// created in dry run comes back with vpaUpdates naming the namespace's VPA
// from the patchFrom-th attempt on (0: never); a pod created for real is
// refused, so a test fails if the check ever stores one.
type webhook struct {
	vpas      *vpafake.Clientset
	patchFrom int
	vpaName   string // overrides the VPA named in the annotation
	attempts  int
	err       error
}

func (w *webhook) react(action k8stesting.Action) (bool, runtime.Object, error) {
	create := action.(k8stesting.CreateActionImpl)
	if len(create.CreateOptions.DryRun) != 1 || create.CreateOptions.DryRun[0] != metav1.DryRunAll {
		return true, nil, fmt.Errorf("pod created without dryRun=All: %v", create.CreateOptions.DryRun)
	}
	w.attempts++
	if w.err != nil {
		return true, nil, w.err
	}
	pod := create.GetObject().(*corev1.Pod).DeepCopy()
	if w.patchFrom == 0 || w.attempts < w.patchFrom {
		return true, pod, nil
	}
	name := w.vpaName
	if name == "" {
		list, err := w.vpas.AutoscalingV1().VerticalPodAutoscalers(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return true, pod, nil
		}
		name = list.Items[0].Name
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[annotations.Updates] = "Pod resources updated by " + name + ": "
	return true, pod, nil
}

func TestRun(t *testing.T) {
	existing := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, UID: "uid-app"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "app"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
		}},
	}
	cases := map[string]struct {
		deployment string
		hook       webhook
		wantErr    string
		wantIs     error
	}{
		"throwaway, patched at once":         {hook: webhook{patchFrom: 1}},
		"throwaway, patched once cached":     {hook: webhook{patchFrom: 4}},
		"throwaway, never patched":           {hook: webhook{}, wantIs: ErrNotPatched, wantErr: "has no vpaUpdates annotation"},
		"throwaway, patched by another VPA":  {hook: webhook{patchFrom: 1, vpaName: "other"}, wantIs: ErrNotPatched, wantErr: "by VPA vpa-selftest-"},
		"pods may not be created":            {hook: webhook{err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))}, wantErr: "forbidden"},
		"existing Deployment, patched":       {deployment: "app", hook: webhook{patchFrom: 2, vpaName: "app-vpa"}},
		"existing Deployment, never patched": {deployment: "app", hook: webhook{}, wantIs: ErrNotPatched},
		"missing Deployment":                 {deployment: "missing", hook: webhook{patchFrom: 1}, wantErr: "reading Deployment openvpa-system/missing"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientset(existing.DeepCopy())
			vpas := vpafake.NewSimpleClientset()
			hook := tc.hook
			hook.vpas = vpas
			kube.PrependReactor("create", "pods", hook.react)
			var seen []string
			kube.PrependReactor("create", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
				seen = append(seen, "deployment "+a.(k8stesting.CreateAction).GetObject().(*appsv1.Deployment).Name)
				return false, nil, nil
			})
			res, err := Run(context.Background(), Clients{
				Pods:        kube.CoreV1().Pods(ns),
				Deployments: kube.AppsV1().Deployments(ns),
				VPAs:        vpas.AutoscalingV1().VerticalPodAutoscalers(ns),
			}, Config{Namespace: ns, Deployment: tc.deployment, Image: "pause", Timeout: 50 * time.Millisecond, Interval: time.Millisecond})
			if tc.wantErr != "" || tc.wantIs != nil {
				if err == nil {
					t.Fatalf("Run = %+v, want an error", res)
				}
				if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
					t.Errorf("Run error %v, want %v", err, tc.wantIs)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Run error %q, want it to contain %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			} else if !strings.HasPrefix(res.VPAUpdates, "Pod resources updated by ") {
				t.Errorf("VPAUpdates = %q", res.VPAUpdates)
			}
			if tc.hook.patchFrom > 1 && err == nil && hook.attempts != tc.hook.patchFrom {
				t.Errorf("%d attempts, want %d (retried until patched)", hook.attempts, tc.hook.patchFrom)
			}
			// The throwaway objects are gone, the existing Deployment stays.
			ds, _ := kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
			if len(ds.Items) != 1 || ds.Items[0].Name != "app" {
				t.Errorf("Deployments left: %v", ds.Items)
			}
			vs, _ := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).List(context.Background(), metav1.ListOptions{})
			if len(vs.Items) != 0 {
				t.Errorf("VPAs left: %v", vs.Items)
			}
			if tc.deployment == "" && len(seen) != 1 {
				t.Errorf("created %v, want one throwaway Deployment", seen)
			}
			if tc.deployment != "" && len(seen) != 0 {
				t.Errorf("created %v with an existing Deployment", seen)
			}
		})
	}
}

// TestPodOf: the dry-run pod is the Deployment's template, owned by it.
func TestPodOf(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, UID: "u"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}}}
	p := podOf(d)
	if p.Namespace != ns || p.Labels["a"] != "b" || len(p.Spec.Containers) != 1 {
		t.Errorf("pod %+v does not copy the template", p)
	}
	if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Deployment" || p.OwnerReferences[0].UID != "u" || !*p.OwnerReferences[0].Controller {
		t.Errorf("owner references %+v, want the Deployment as controller", p.OwnerReferences)
	}
}
