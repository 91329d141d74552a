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

package app

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/admission-controller/app/options"
)

// maxShippedTimeout bounds the shipped webhook timeout: a hung controller
// holds every pod creation in the cluster this long.
const maxShippedTimeout = 10

// TestWebhookRegistrationMatchesTheController: deploy/ ships the
// MutatingWebhookConfiguration, so that `kubectl delete -k deploy/` removes
// it, and it must be what the controller registers with deploy/'s
// arguments (less the CA bundle the controller fills in): otherwise each
// `kubectl apply` and each start would change it back and forth.
func TestWebhookRegistrationMatchesTheController(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "components")
	var d appsv1.Deployment
	readYAML(t, filepath.Join(dir, "admission-controller-deployment.yaml"), &d)
	var shipped admissionregistrationv1.MutatingWebhookConfiguration
	readYAML(t, filepath.Join(dir, "admission-controller-webhook.yaml"), &shipped)

	o := options.NewOptions()
	fs := pflag.NewFlagSet("admission-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(append(d.Spec.Template.Spec.Containers[0].Args, "--kubeconfig="+kubeconfig)); err != nil {
		t.Fatal(err)
	}
	o.Namespace = d.Namespace
	c, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !o.RegisterWebhook || o.RegisterByURL {
		t.Fatalf("deploy/'s admission controller must register through its Service")
	}
	want := registration(c, nil).Config()
	if shipped.Name != want.Name {
		t.Errorf("shipped name %q, the controller registers %q", shipped.Name, want.Name)
	}
	if !apiequality.Semantic.DeepEqual(want.Webhooks, shipped.Webhooks) {
		have, _ := yaml.Marshal(shipped.Webhooks)
		out, _ := yaml.Marshal(want.Webhooks)
		t.Fatalf("shipped webhooks differ from the controller's:\nshipped:\n%s\nthe controller's:\n%s", have, out)
	}
	if to := *shipped.Webhooks[0].TimeoutSeconds; to > maxShippedTimeout {
		t.Errorf("shipped timeout %d s: a hung controller would hold every pod creation that long; want at most %d", to, maxShippedTimeout)
	}
}

func readYAML(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(data, []byte("\n---\n"))
	if err := yaml.UnmarshalStrict(docs[0], into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
