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

// Package release tests a release as a user gets it: `make release` pushes the images and the
// chart to a registry (Debian's docker-registry on loopback, installed by hack/registry.sh), helm
// installs the chart from it into openvpa-system, and the real node's containerd pulls the images
// (hack/cluster/node.sh). It checks that the released components work (a recommendation, a
// patched pod, an eviction, a checkpoint), that `helm upgrade` to a second release keeps every
// new pod patched, and that `helm uninstall` keeps every VPA and checkpoint.
//
// The chart's components act on every namespace, like e2e/realnode's: hack/test.sh runs this
// package alone, after e2e/realnode.
package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
)

const (
	releaseNS   = "openvpa-system"
	releaseName = "openvpa" // the README's
	chartName   = "vertical-pod-autoscaler"
	nodeLabel   = framework.RealNodeLabel
	// The host's side of the real node's veth (hack/cluster/node.sh) and its network namespace.
	hostAddr  = "10.200.0.1"
	nodeNetns = "/run/netns/openvpa-node"
	first     = "v0.0.0-e2e.1"
	second    = "v0.0.0-e2e.2"
	crdGroup  = "autoscaling.k8s.io"
)

var (
	components = []string{"vpa-recommender", "vpa-updater", "vpa-admission-controller"}
	// The chart's values key of each component.
	valuesKey = map[string]string{"vpa-recommender": "recommender", "vpa-updater": "updater", "vpa-admission-controller": "admissionController"}
	crds      = []string{"verticalpodautoscalers." + crdGroup, "verticalpodautoscalercheckpoints." + crdGroup, "verticalpodautoscalerpolicies.openvpa.io"}
)

// manifest is the part of release.json the test reads.
type manifest struct {
	Images []struct {
		Name, Repository, Tag, Digest string
	} `json:"images"`
	Chart struct {
		Reference, Version string
	} `json:"chart"`
}

type env struct {
	c        *framework.Cluster
	vpas     vpaclient.Interface
	registry string // 127.0.0.1:<port>
	helmBin  string
}

// start runs a command in the background until the test ends.
func start(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("output of %s %s:\n%s", name, strings.Join(args, " "), out.String())
		}
	})
}

func (e *env) run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = e.c.RepoRoot
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+e.c.KubeconfigPath, "KUBECTL="+e.c.KubectlPath), env...)
	// Only stdout is the answer (a path, say): progress, such as apt-get's on a fresh machine,
	// goes to stderr, which is shown when the command fails.
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// startRegistry runs docker-registry on a free loopback port, reachable from the real node's
// network namespace at the same address through two socat forwarders.
func (e *env) startRegistry(t *testing.T) {
	bin := strings.TrimSpace(e.run(t, nil, filepath.Join(e.c.RepoRoot, "hack", "registry.sh")))
	port := framework.FreePort(t)
	e.registry = "127.0.0.1:" + strconv.Itoa(port)
	dir := t.TempDir()
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), e.registry)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, bin, "serve", cfgPath)
	p := strconv.Itoa(port)
	start(t, "socat", "TCP-LISTEN:"+p+",bind="+hostAddr+",fork,reuseaddr", "TCP:127.0.0.1:"+p)
	start(t, "nsenter", "--net="+nodeNetns, "socat", "TCP-LISTEN:"+p+",bind=127.0.0.1,fork,reuseaddr", "TCP:"+hostAddr+":"+p)
	client := http.Client{Timeout: 5 * time.Second}
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		resp, err := client.Get("http://" + e.registry + "/v2/")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		return true, nil
	})
	// The same address from inside the node's network namespace, through both forwarders.
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		out, err := exec.Command("nsenter", "--net="+nodeNetns, "socat", "-u", "OPEN:/dev/null", "TCP:"+e.registry).CombinedOutput()
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, out)
		}
		return true, nil
	})
}

// release runs make release for version and reads its release.json.
func (e *env) release(t *testing.T, version string) manifest {
	t.Helper()
	e.run(t, nil, "make", "release", "VERSION="+version, "REGISTRY="+e.registry+"/openvpa", "PLAIN_HTTP=1", "ALLOW_DIRTY=1")
	b, err := os.ReadFile(filepath.Join(e.c.RepoRoot, "_output", "release", version, "release.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Images) != len(components) {
		t.Fatalf("release.json lists %d images", len(m.Images))
	}
	return m
}

// readmeInstall is the info string of the README's install block.
const readmeInstall = "```sh install"

// readmeBlock returns the README's install commands.
func readmeBlock(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), readmeInstall+"\n")
	if !ok {
		t.Fatalf("README.md has no %q block", readmeInstall)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("README.md: the %q block does not end", readmeInstall)
	}
	if !strings.Contains(block, "helm install "+releaseName+" oci://ghcr.io/openvpa/"+chartName) {
		t.Fatalf("README.md's install block no longer installs release %s from oci://ghcr.io/openvpa/%s:\n%s", releaseName, chartName, block)
	}
	return block
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// installFromREADME runs the README's install commands as they are written, with bash, against
// the local cluster. Only the environment differs from a user's: a helm on PATH that reads the
// chart from the test's registry instead of ghcr.io/openvpa (with --plain-http and the release's
// version) and places the components on the real node, a kubectl of the cluster's version, and a
// kubeconfig whose namespace is a fresh test namespace.
func (e *env) installFromREADME(t *testing.T, m manifest) {
	t.Helper()
	block := readmeBlock(t, e.c.RepoRoot)
	dir := t.TempDir()
	extra := []string{"--version", m.Chart.Version, "--plain-http", "--timeout", "6m"}
	extra = append(extra, chartArgs()...)
	var quoted []string
	for _, a := range extra {
		quoted = append(quoted, shellQuote(a))
	}
	helmShim := "#!/usr/bin/env bash\nset -euo pipefail\nargs=()\n" +
		"for a in \"$@\"; do args+=(\"${a/#oci:\\/\\/ghcr.io\\/openvpa\\//oci://" + e.registry + "/openvpa/}\"); done\n" +
		"if [[ \"${1:-}\" == install || \"${1:-}\" == upgrade ]]; then args+=(" + strings.Join(quoted, " ") + "); fi\n" +
		"exec " + shellQuote(e.helmBin) + " \"${args[@]}\"\n"
	kubectlShim := "#!/usr/bin/env bash\nexec " + shellQuote(e.c.KubectlPath) + " \"$@\"\n"
	for name, body := range map[string]string{"helm": helmShim, "kubectl": kubectlShim} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ns := e.c.NewNamespace(t)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	raw := e.c.Kubectl(t, "config", "view", "--raw")
	if err := os.WriteFile(kubeconfig, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(e.c.KubectlPath, "--kubeconfig", kubeconfig, "config", "set-context", "--current", "--namespace", ns).CombinedOutput(); err != nil {
		t.Fatalf("kubectl config set-context: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README.md's install commands: %v\n%s\n--- output\n%s", err, block, out)
	}
	t.Logf("README.md's install commands:\n%s\n--- output\n%s", block, out)
	if _, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("the README's VPA web: %v", err)
	}
}

func (e *env) helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.helmE(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) helmE(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.helmBin, append(args, "--kubeconfig", e.c.KubeconfigPath)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// chartArgs are the values the test sets: the components on the real node, and a recommender
// that writes each VPA's checkpoint within 30 s (the default spreads them over 10 minutes). The
// released chart already names the release's images.
func chartArgs() []string {
	args := []string{"--set-json", `recommender.extraArgs=["--checkpoints-write-interval=30s"]`}
	for _, key := range valuesKey {
		args = append(args,
			"--set-json", key+`.nodeSelector={"`+nodeLabel+`":"true"}`,
			"--set-json", key+`.tolerations=[{"key":"`+nodeLabel+`","operator":"Equal","value":"true","effect":"NoSchedule"}]`)
	}
	return args
}

// prepare makes the cluster ready for the chart whether or not other tests ran before: CRDs
// that exist (from deploy/ or another test) are adopted by the release; cluster-scoped objects
// of deploy/rbac and the webhook configuration that exist and helm does not manage are deleted.
// Nothing missing is touched.
func (e *env) prepare(t *testing.T) {
	ctx := context.Background()
	for _, name := range crds {
		out, err := e.c.KubectlE("get", "crd", name, "--ignore-not-found", "-o", "name")
		if err != nil {
			t.Fatalf("kubectl get crd %s: %v\n%s", name, err, out)
		}
		if strings.TrimSpace(out) == "" {
			t.Logf("CRD %s does not exist: the chart creates it", name)
			continue
		}
		e.c.Kubectl(t, "label", "--overwrite", "crd", name, "app.kubernetes.io/managed-by=Helm")
		e.c.Kubectl(t, "annotate", "--overwrite", "crd", name, "meta.helm.sh/release-name="+releaseName, "meta.helm.sh/release-namespace="+releaseNS)
		t.Logf("CRD %s exists: adopted by the release", name)
	}
	rendered := e.c.Kubectl(t, "kustomize", filepath.Join(e.c.RepoRoot, "deploy", "rbac"))
	for _, doc := range strings.Split(rendered, "\n---") {
		var obj struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		var err error
		switch obj.Kind {
		case "ClusterRole":
			err = e.c.Client.RbacV1().ClusterRoles().Delete(ctx, obj.Metadata.Name, metav1.DeleteOptions{})
		case "ClusterRoleBinding":
			err = e.c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, obj.Metadata.Name, metav1.DeleteOptions{})
		default:
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting %s %s: %v", obj.Kind, obj.Metadata.Name, err)
		}
	}
	wh, err := e.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "vpa-webhook-config", metav1.GetOptions{})
	if err == nil && wh.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		if err := e.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, wh.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// waitRolledOut waits until the component's Deployment runs only pods of its current template,
// all ready on the real node, and returns them.
func (e *env) waitRolledOut(t *testing.T, name string, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	framework.WaitFor(t, timeout, func() (bool, error) {
		d, err := e.c.Client.AppsV1().Deployments(releaseNS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s, want := d.Status, ptr.Deref(d.Spec.Replicas, 1)
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.ReadyReplicas != want || s.Replicas != want {
			return false, fmt.Errorf("%s: %d replicas, %d updated, %d ready", name, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas)
		}
		l, err := e.c.Client.CoreV1().Pods(releaseNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		pods = nil
		for _, p := range l.Items {
			if p.DeletionTimestamp != nil {
				return false, fmt.Errorf("%s: pod %s is terminating", name, p.Name)
			}
			if p.Spec.NodeName != framework.RealNodeName {
				return false, fmt.Errorf("%s: pod %s on %q", name, p.Name, p.Spec.NodeName)
			}
			pods = append(pods, p)
		}
		return int32(len(pods)) == want, nil
	})
	return pods
}

// checkPulled checks that the node's containerd pulled each image from the registry and that
// the component's pods run the release's digest.
func (e *env) checkPulled(t *testing.T, m manifest) {
	t.Helper()
	buildDir := strings.TrimSpace(e.run(t, nil, filepath.Join(e.c.RepoRoot, "hack", "cluster", "build.sh"), "--print"))
	images := e.run(t, nil, filepath.Join(buildDir, "ctr"), "--address", filepath.Join(e.c.Dir, "node", "containerd.sock"), "-n", "k8s.io", "images", "ls", "-q")
	for _, img := range m.Images {
		if !strings.Contains(images, img.Repository+":"+img.Tag) {
			t.Errorf("containerd on the node has no %s:%s; it has:\n%s", img.Repository, img.Tag, images)
		}
		for _, p := range e.waitRolledOut(t, img.Name, 3*time.Minute) {
			for _, s := range p.Status.ContainerStatuses {
				if !strings.HasSuffix(s.ImageID, "@"+img.Digest) || !strings.HasPrefix(s.ImageID, e.registry+"/") {
					t.Errorf("pod %s runs image %s (%s), want %s@%s", p.Name, s.Image, s.ImageID, img.Repository, img.Digest)
				}
			}
		}
	}
}

// workload is memhog on the real node, below the pod minimums (25m, 250Mi): the updater evicts
// it at once.
func workload(ns, name string) *appsv1.Deployment {
	return framework.MemhogOnRealNode(ns, name, []string{"--memory=30Mi", "--cpu=50m"}, framework.Resources("10m", "20Mi"), nil)
}

func TestReleaseFromARegistry(t *testing.T) {
	c := framework.Start(t)
	vpas, err := vpaclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{c: c, vpas: vpas}
	e.helmBin = strings.TrimSpace(e.run(t, []string{"HELM_PATH_ONLY=1"}, filepath.Join(c.RepoRoot, "hack", "helm.sh")))
	ctx := context.Background()
	e.startRegistry(t)
	// memhog and pause for the node (cluster-up imports them too; this keeps them current).
	e.run(t, nil, "make", "images")
	m1 := e.release(t, first)

	e.prepare(t)
	chart := "oci://" + e.registry + "/openvpa/" + chartName
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range components {
				out, _ := c.KubectlE("logs", "-n", releaseNS, "deployment/"+name, "--all-containers", "--tail=60")
				t.Logf("logs of %s:\n%s", name, out)
			}
		}
		_, _ = e.helmE("uninstall", releaseName, "-n", releaseNS, "--wait", "--timeout", "3m", "--ignore-not-found")
		_ = c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), "vpa-webhook-config", metav1.DeleteOptions{})
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), releaseNS, metav1.DeleteOptions{})
	})
	e.installFromREADME(t, m1)
	e.checkPulled(t, m1)

	ns := c.NewNamespace(t)
	d := workload(ns, "hog")
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mode := vpav1.UpdateModeRecreate
	vpa := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "hog", Namespace: ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hog"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode, MinReplicas: ptr.To[int32](1)},
		},
	}
	if _, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Create(ctx, vpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("the released components recommend, evict, patch and checkpoint", func(t *testing.T) {
		framework.WaitFor(t, 5*time.Minute, func() (bool, error) {
			v, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Get(ctx, "hog", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			r := v.Status.Recommendation
			if !(r != nil && len(r.ContainerRecommendations) > 0) {
				return false, fmt.Errorf("no recommendation yet")
			}
			return true, nil
		})
		framework.WaitFor(t, 5*time.Minute, func() (bool, error) {
			evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=EvictedByVPA"})
			if err != nil {
				return false, err
			}
			if len(evs.Items) == 0 {
				return false, fmt.Errorf("no EvictedByVPA event yet")
			}
			return true, nil
		})
		framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
			l, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=hog"})
			if err != nil {
				return false, err
			}
			for _, p := range l.Items {
				if p.Annotations["vpaUpdates"] != "" && p.DeletionTimestamp == nil {
					return true, nil
				}
			}
			return false, fmt.Errorf("no patched pod yet")
		})
		framework.WaitFor(t, 5*time.Minute, func() (bool, error) {
			l, err := vpas.AutoscalingV1().VerticalPodAutoscalerCheckpoints(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			if len(l.Items) == 0 {
				return false, fmt.Errorf("no checkpoint yet")
			}
			return true, nil
		})
	})
	if t.Failed() {
		return
	}

	t.Run("helm upgrade to the next release keeps every new pod patched", func(t *testing.T) {
		m2 := e.release(t, second)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var created, unpatched int
		var firstErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				p, err := framework.DryRunPodWith(ctx, c.Client, ns, "hog")
				mu.Lock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = err
					}
				case p.Annotations["vpaUpdates"] == "":
					unpatched++
					created++
				default:
					created++
				}
				mu.Unlock()
			}
		}()
		e.helm(t, append([]string{"upgrade", releaseName, chart, "--version", m2.Chart.Version, "--plain-http",
			"-n", releaseNS, "--wait", "--timeout", "6m"}, chartArgs()...)...)
		e.checkPulled(t, m2)
		close(stop)
		wg.Wait()
		if firstErr != nil {
			t.Errorf("creating a dry-run pod: %v", firstErr)
		}
		if created == 0 || unpatched > 0 {
			t.Errorf("%d of %d pods created during the upgrade were not patched", unpatched, created)
		} else {
			t.Logf("%d dry-run pods during the upgrade, all patched", created)
		}
	})

	t.Run("helm uninstall keeps every VPA and checkpoint", func(t *testing.T) {
		before := e.uids(t)
		if len(before) == 0 {
			t.Fatal("no VPA or checkpoint to keep")
		}
		e.helm(t, "uninstall", releaseName, "-n", releaseNS, "--wait", "--timeout", "3m")
		after := e.uids(t)
		for key, uid := range before {
			if after[key] != uid {
				t.Errorf("%s: UID %s before the uninstall, %q after", key, uid, after[key])
			}
		}
	})
}

// uids maps every VPA and checkpoint in the cluster to its UID.
func (e *env) uids(t *testing.T) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	out := map[string]types.UID{}
	v, err := e.vpas.AutoscalingV1().VerticalPodAutoscalers(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range v.Items {
		out["vpa "+o.Namespace+"/"+o.Name] = o.UID
	}
	cp, err := e.vpas.AutoscalingV1().VerticalPodAutoscalerCheckpoints(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cp.Items {
		out["checkpoint "+o.Namespace+"/"+o.Name] = o.UID
	}
	return out
}
