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

// Package helm installs the Helm chart deploy/charts/vertical-pod-autoscaler
// with helm (pinned in hack/tools/helm, run through hack/helm.sh) into a
// control plane of its own (a second instance of the local cluster, on free
// ports), so that the chart goes into a namespace of its own (openvpa-system,
// not kube-system: every namespaced object, Lease flag and the webhook follow
// the release) with its default names and CRDs as a user installs it, without
// touching the shared cluster other packages test against. The components' pods run on KWOK nodes, where they
// are fake: the test checks what the chart does (every object created, the
// Deployments available, the webhook configured with the chart's CA) and that
// `helm uninstall` removes every object it created.
package helm

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/e2e/framework"
)

type helm struct {
	bin, kubeconfig string
}

func newHelm(t *testing.T, c *framework.Cluster) helm {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.RepoRoot, "hack", "helm.sh"))
	cmd.Env = append(os.Environ(), "HELM_PATH_ONLY=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("building helm: %v\n%s", err, stderr.String())
	}
	return helm{bin: strings.TrimSpace(string(out)), kubeconfig: c.KubeconfigPath}
}

func (h helm) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := h.try(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// try runs helm and returns its standard output, or an error with both
// outputs.
func (h helm) try(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// manifestObjects parses `helm get manifest` output.
func manifestObjects(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+manifest, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// get reads an object of the manifest from the cluster.
func get(ctx context.Context, c *framework.Cluster, mapper meta.RESTMapper, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
	}
	return c.Dynamic.Resource(m.Resource).Get(ctx, o.GetName(), metav1.GetOptions{})
}

func TestChartInstallsAndUninstalls(t *testing.T) {
	c := framework.StartSecond(t)
	h := newHelm(t, c)
	ctx := context.Background()
	chart := filepath.Join(c.RepoRoot, "deploy", "charts", "vertical-pod-autoscaler")
	const ns = "openvpa-system"
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})

	// The webhook leaves kube-system and the release's namespace alone, where the components'
	// own (fake) pods start: nothing answers it on KWOK.
	h.run(t, "install", "vpa", chart, "--namespace", ns, "--create-namespace", "--wait", "--timeout", "3m",
		"--set", "crds.keep=false",
		"--set-json", `admissionController.mutatingWebhookConfiguration.namespaceSelector={"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","openvpa-system"]}]}`)
	objs := manifestObjects(t, h.run(t, "get", "manifest", "vpa", "--namespace", ns))
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))

	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetNamespace() != "" && o.GetNamespace() != ns {
			t.Errorf("%s %s is in namespace %s, not the release's %s", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
		}
		if _, err := get(ctx, c, mapper, o); err != nil {
			t.Errorf("%s %s/%s from the release: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	want := map[string]int{"CustomResourceDefinition": 3, "ServiceAccount": 3, "Deployment": 3, "Service": 1,
		"PodDisruptionBudget": 3, "Secret": 1, "MutatingWebhookConfiguration": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("the release has %d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if kinds["ClusterRole"] == 0 || kinds["ClusterRoleBinding"] == 0 || kinds["Role"] == 0 || kinds["RoleBinding"] == 0 {
		t.Errorf("the release lacks RBAC: %v", kinds)
	}

	// Deployments available on the KWOK nodes. helm --wait watches the
	// pods; the deployment controller writes availableReplicas after that,
	// so the status is polled.
	for _, name := range []string{"vpa-recommender", "vpa-updater", "vpa-admission-controller"} {
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if d.Status.AvailableReplicas != *d.Spec.Replicas {
				return false, fmt.Errorf("deployment %s: %d of %d replicas available", name, d.Status.AvailableReplicas, *d.Spec.Replicas)
			}
			return true, nil
		})
	}
	// Every Lease the components take is in the release's namespace.
	for name, flags := range map[string][]string{
		"vpa-recommender":          {"--leader-elect-resource-namespace=" + ns},
		"vpa-updater":              {"--leader-elect-resource-namespace=" + ns, "--admission-controller-status-lease-namespace=" + ns},
		"vpa-admission-controller": {"--status-lease-namespace=" + ns},
	} {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
		for _, f := range flags {
			if !strings.Contains(args, f) {
				t.Errorf("deployment %s: arguments %q lack %s", name, args, f)
			}
		}
	}
	// The webhook configuration trusts the CA of the certificate the admission controller serves.
	secret, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "vpa-tls-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"caCert.pem", "serverCert.pem", "serverKey.pem"} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("secret vpa-tls-certs has no %s", k)
		}
	}
	wh, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "vpa-webhook-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hook := wh.Webhooks[0]
	if !bytes.Equal(hook.ClientConfig.CABundle, secret.Data["caCert.pem"]) {
		t.Errorf("webhook caBundle %q is not the secret's CA", base64.StdEncoding.EncodeToString(hook.ClientConfig.CABundle))
	}
	if s := hook.ClientConfig.Service; s == nil || s.Namespace != ns || s.Name != "vpa-webhook" {
		t.Errorf("webhook service %+v, want %s/vpa-webhook", hook.ClientConfig.Service, ns)
	}
	if hook.TimeoutSeconds == nil || *hook.TimeoutSeconds != 5 {
		t.Errorf("webhook timeoutSeconds %v, want the chart's default 5", hook.TimeoutSeconds)
	}
	// The admission controller may get, update and patch only its own webhook configuration.
	role, err := c.Client.RbacV1().ClusterRoles().Get(ctx, "system:vpa-admission-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "mutatingwebhookconfigurations") && !slices.Equal(r.Verbs, []string{"create"}) &&
			!slices.Equal(r.ResourceNames, []string{"vpa-webhook-config"}) {
			t.Errorf("admission controller rule %+v reaches other webhook configurations", r)
		}
	}
	// An upgrade keeps the certificate (the chart reads it back).
	h.run(t, "upgrade", "vpa", chart, "--namespace", ns, "--reuse-values", "--wait", "--timeout", "3m")
	again, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "vpa-tls-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Data["caCert.pem"], secret.Data["caCert.pem"]) {
		t.Error("helm upgrade replaced the webhook's CA")
	}

	// A CRD deleted while the API server's cache of its objects is still
	// starting can take minutes to go: the CRD finalizer's list of instances
	// is refused ("storage is (re)initializing", kubernetes/enhancements#4568)
	// and, in the slow cases, succeeds only at about the apiextensions
	// informer's five-minute resync. Reproduced on this control plane by
	// deleting a pair of new CRDs as soon as they are Established: 2 of 16
	// took 30 s and 287 s, the rest 1 s; listing both first, 30 of 30 took
	// under 1 s. A user uninstalls CRDs that have long served; the test,
	// which installs and uninstalls within seconds, waits until a whole (not
	// paginated) list of each is served, which is the list the finalizer
	// makes.
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"},
		{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalercheckpoints"},
		{Group: "openvpa.io", Version: "v1alpha1", Resource: "verticalpodautoscalerpolicies"},
	} {
		framework.WaitFor(t, time.Minute, func() (bool, error) {
			_, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
			return err == nil, err
		})
	}
	if _, err := h.try(t, "uninstall", "vpa", "--namespace", ns, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("%v\nobjects of the release left:%s", err, leftOver(ctx, c, mapper, objs))
	}
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		for _, o := range objs {
			_, err := get(ctx, c, mapper, o)
			if err == nil {
				return false, fmt.Errorf("%s %s/%s still exists", o.GetKind(), o.GetNamespace(), o.GetName())
			}
			if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// leftOver describes the objects of a release still in the cluster: their
// deletion timestamps, finalizers and conditions.
func leftOver(ctx context.Context, c *framework.Cluster, mapper meta.RESTMapper, objs []*unstructured.Unstructured) string {
	var b strings.Builder
	for _, o := range objs {
		got, err := get(ctx, c, mapper, o)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			continue
		}
		fmt.Fprintf(&b, "\n%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		if err != nil {
			fmt.Fprintf(&b, ": %v", err)
			continue
		}
		fmt.Fprintf(&b, ": deletionTimestamp %v, finalizers %v", got.GetDeletionTimestamp(), got.GetFinalizers())
		if conds, ok, _ := unstructured.NestedSlice(got.Object, "status", "conditions"); ok {
			fmt.Fprintf(&b, ", conditions %v", conds)
		}
	}
	return b.String()
}
