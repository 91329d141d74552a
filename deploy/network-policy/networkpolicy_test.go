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

// Package networkpolicy checks the component's NetworkPolicy against the
// admission controller's Deployment.
package networkpolicy

import (
	"bytes"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

func admissionController(t *testing.T) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile("../components/admission-controller-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(bytes.Split(data, []byte("\n---\n"))[0], &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestWebhookOnlyFromTheAPIServer: the policy selects the admission
// controller's pods, admits the webhook port only from address blocks (never
// from every source, pods or namespaces) and leaves the metrics port open for
// probes and scraping.
func TestWebhookOnlyFromTheAPIServer(t *testing.T) {
	data, err := os.ReadFile("networkpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var np networkingv1.NetworkPolicy
	if err := yaml.UnmarshalStrict(data, &np); err != nil {
		t.Fatal(err)
	}
	d := admissionController(t)
	if np.Namespace != d.Namespace {
		t.Errorf("namespace %q, the Deployment's is %q", np.Namespace, d.Namespace)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("pod selector %v does not select the admission controller's pods (%v)", np.Spec.PodSelector, d.Spec.Template.Labels)
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("policy types %v, want Ingress", np.Spec.PolicyTypes)
	}
	var webhook, metrics int32
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		switch p.Name {
		case "webhook":
			webhook = p.ContainerPort
		case "prometheus":
			metrics = p.ContainerPort
		}
	}
	if webhook == 0 || metrics == 0 {
		t.Fatalf("the Deployment names no webhook or prometheus port")
	}
	names := func(port *intstr.IntOrString, name string, number int32) bool {
		return port == nil || port.String() == name || port.IntValue() == int(number)
	}
	webhookRules, metricsOpen := 0, false
	for i, rule := range np.Spec.Ingress {
		coversWebhook := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			if names(p.Port, "webhook", webhook) {
				coversWebhook = true
			}
			if names(p.Port, "prometheus", metrics) && len(rule.From) == 0 {
				metricsOpen = true
			}
		}
		if !coversWebhook {
			continue
		}
		webhookRules++
		if len(rule.From) == 0 {
			t.Errorf("ingress[%d] admits the webhook port from everywhere", i)
		}
		for j, peer := range rule.From {
			if peer.IPBlock == nil || peer.PodSelector != nil || peer.NamespaceSelector != nil {
				t.Errorf("ingress[%d].from[%d] is not an address block: %+v", i, j, peer)
			} else if peer.IPBlock.CIDR == "0.0.0.0/0" || peer.IPBlock.CIDR == "::/0" {
				t.Errorf("ingress[%d].from[%d] admits every address", i, j)
			}
		}
	}
	if webhookRules == 0 {
		t.Error("no rule admits the API server to the webhook port")
	}
	if !metricsOpen {
		t.Error("the metrics and health port is not admitted")
	}
}

func TestKustomization(t *testing.T) {
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Kind      string   `json:"kind"`
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	if k.Kind != "Component" || !slices.Equal(k.Resources, []string{"networkpolicy.yaml"}) {
		t.Errorf("%s with resources %v, want a Component of the NetworkPolicy", k.Kind, k.Resources)
	}
}
