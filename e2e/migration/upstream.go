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

package migration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openvpa/openvpa/e2e/framework"
)

// The document's paths.
const (
	pathManifests    = "manifests"
	pathHelmTakeover = "helm-takeover"
	pathHelmRemove   = "helm-remove"
	pathStorage      = "storage"
	pathRollback     = "rollback"
)

// oldRelease is the Helm release of the upstream layout, named and placed as Fairwinds' chart
// is usually installed, so that its objects have OpenVPA's names in kube-system.
const oldRelease = "vpa"

// upstreamComponents is what upstream's vpa-up.sh leaves in kube-system beside the CRDs:
// ServiceAccounts, roles with upstream's names (some of them also OpenVPA's), the Deployments,
// the webhook Service, its secret and its registration (kept away from every namespace).
func upstreamComponents(t *testing.T, selector func(component string) string) string {
	t.Helper()
	ca, key := selfSigned(t)
	var b strings.Builder
	for _, comp := range []string{"recommender", "updater", "admission-controller"} {
		name := "vpa-" + comp
		b.WriteString(`apiVersion: v1
kind: ServiceAccount
metadata: {name: ` + name + `, namespace: kube-system}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: kube-system, labels: {` + selector(comp) + `}}
spec:
  replicas: 1
  selector: {matchLabels: {` + selector(comp) + `}}
  template:
    metadata: {labels: {` + selector(comp) + `}}
    spec:
      serviceAccountName: ` + name + `
      containers:
      - name: ` + comp + `
        image: registry.k8s.io/autoscaling/` + name + `:1.7.1
        args: [--v=4, --stderrthreshold=info]
        resources: {requests: {cpu: 50m, memory: 200Mi}, limits: {cpu: 200m, memory: 500Mi}}
---
`)
	}
	b.WriteString(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: system:vpa-actor}
rules:
- {apiGroups: [autoscaling.k8s.io], resources: [verticalpodautoscalers], verbs: [get, list, watch, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: system:vpa-actor}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:vpa-actor}
subjects:
- {kind: ServiceAccount, name: vpa-recommender, namespace: kube-system}
- {kind: ServiceAccount, name: vpa-updater, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: system:vpa-target-reader-binding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:vpa-actor}
subjects:
- {kind: ServiceAccount, name: vpa-admission-controller, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: system:vpa-admission-controller}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: system:vpa-admission-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:vpa-admission-controller}
subjects:
- {kind: ServiceAccount, name: vpa-admission-controller, namespace: kube-system}
---
apiVersion: v1
kind: Service
metadata: {name: vpa-webhook, namespace: kube-system}
spec:
  selector: {` + selector("admission-controller") + `}
  ports: [{port: 443, targetPort: 8000}]
---
apiVersion: v1
kind: Secret
metadata: {name: vpa-tls-certs, namespace: kube-system}
data: {caCert.pem: ` + ca + `, serverCert.pem: ` + ca + `, serverKey.pem: ` + key + `}
`)
	return b.String()
}

// upstreamWebhook is the registration upstream's admission controller makes at its start; it
// selects no namespace here, so nothing calls it.
const upstreamWebhook = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: vpa-webhook-config}
webhooks:
- name: vpa.k8s.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig: {service: {namespace: kube-system, name: vpa-webhook, port: 443}}
  namespaceSelector: {matchLabels: {openvpa.io/e2e-selects-nothing: "true"}}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
`

// installFromManifests lays out upstream as vpa-up.sh does: client-side kubectl apply.
func (u *upstreamCluster) installFromManifests(t *testing.T) {
	t.Helper()
	path := filepath.Join(u.dir, "upstream.yaml")
	manifest := upstreamComponents(t, func(comp string) string { return "app: vpa-" + comp }) + "---\n" + upstreamWebhook
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	u.c.Kubectl(t, "apply", "-f", path)
}

// installWithHelm lays out upstream as a Helm release named oldRelease in kube-system that owns
// the CRDs (templated, without the keep policy, as upstream's chart with crds.keep=false) and
// components with chart-style names, selectors and cluster roles.
func (u *upstreamCluster) installWithHelm(t *testing.T, helm string) {
	t.Helper()
	chart := filepath.Join(u.dir, "old-chart")
	if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(chart, "files"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeYAML(t, filepath.Join(chart, "files", "crds.yaml"), u.crds[0], u.crds[1])
	objects := upstreamComponents(t, func(comp string) string {
		return "app.kubernetes.io/name: vpa, app.kubernetes.io/instance: " + oldRelease + ", app.kubernetes.io/component: " + comp
	}) + `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: vpa-checkpoint-actor}
rules:
- {apiGroups: [autoscaling.k8s.io], resources: [verticalpodautoscalercheckpoints], verbs: [get, list, watch, create, patch, delete]}
`
	files := map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: vpa\nversion: 4.7.2\nappVersion: 1.7.1\n",
		"files/objects.yaml":     objects,
		"templates/crds.yaml":    `{{ .Files.Get "files/crds.yaml" }}`,
		"templates/objects.yaml": `{{ .Files.Get "files/objects.yaml" }}`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(chart, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The CRDs exist already (they were upgraded from v1beta2); the release adopts them as
	// upstream's chart does on an upgrade from its crds/ folder.
	for _, crd := range []string{vpaCRD, checkpointCRD} {
		u.c.Kubectl(t, "annotate", "crd", crd, "meta.helm.sh/release-name="+oldRelease, "meta.helm.sh/release-namespace=kube-system")
		u.c.Kubectl(t, "label", "crd", crd, "app.kubernetes.io/managed-by=Helm")
	}
	runHelm(t, u.c, helm, "install", oldRelease, chart, "--namespace", "kube-system")
}

// selfSigned returns a self-signed certificate and its key, PEM in base64, as upstream's
// gencerts.sh leaves in the secret vpa-tls-certs.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vpa_webhook_ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		DNSNames:              []string{"vpa-webhook.kube-system.svc"},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, b []byte) string {
		return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}))
	}
	return enc("CERTIFICATE", der), enc("EC PRIVATE KEY", keyDER)
}

// helmBinary builds helm once (hack/helm.sh) and returns its path.
func helmBinary(t *testing.T, c *framework.Cluster) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.RepoRoot, "hack", "helm.sh"))
	cmd.Env = append(os.Environ(), "HELM_PATH_ONLY=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("building helm: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func runHelm(t *testing.T, c *framework.Cluster, helm string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", c.KubeconfigPath)...)
	cmd.Env = append(os.Environ(), helmHomes(t)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// helmHomes keeps helm's cache and configuration out of the user's home.
func helmHomes(t *testing.T) []string {
	return []string{"HELM_CACHE_HOME=" + t.TempDir(), "HELM_CONFIG_HOME=" + t.TempDir(), "HELM_DATA_HOME=" + t.TempDir()}
}

// runPath runs the document's blocks of one path, in order, in a folder of their own.
func (u *upstreamCluster) runPath(t *testing.T, path, helm string, env ...string) {
	t.Helper()
	blocks, err := parseBlocks(filepath.Join(u.c.RepoRoot, "docs", "migration.md"))
	if err != nil {
		t.Fatal(err)
	}
	todo := forPath(blocks, path)
	if len(todo) == 0 {
		t.Fatalf("docs/migration.md has no block for path %q", path)
	}
	dirs := filepath.Dir(u.c.KubectlPath)
	if helm != "" {
		dirs += string(os.PathListSeparator) + filepath.Dir(helm)
	}
	work := t.TempDir()
	for _, b := range todo {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.script)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "KUBECONFIG="+u.c.KubeconfigPath, "PATH="+dirs+string(os.PathListSeparator)+os.Getenv("PATH"),
			"OPENVPA_DIR="+u.c.RepoRoot, "OPENVPA_CHART="+filepath.Join(u.c.RepoRoot, "deploy", "charts", "vertical-pod-autoscaler"))
		cmd.Env = append(cmd.Env, helmHomes(t)...)
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("docs/migration.md:%d (path %s): %v\n%s\n--- output\n%s", b.line, path, err, b.script, out)
		}
		t.Logf("docs/migration.md:%d (path %s):\n%s", b.line, path, out)
	}
}
