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

// Package components checks the shipped Deployments and their disruption
// budgets against what the components' runtime needs.
package components

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func documents(t *testing.T, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// TestDeploymentsAreHighlyAvailable: every component runs two replicas that
// roll one at a time without dropping below two ready, probes /healthz and
// /readyz, elects a leader where it runs a loop, and has a disruption
// budget that lets one replica go at a time.
func TestDeploymentsAreHighlyAvailable(t *testing.T) {
	var pdbs []policyv1.PodDisruptionBudget
	for _, d := range documents(t, "disruption-budgets.yaml") {
		var pdb policyv1.PodDisruptionBudget
		if err := yaml.UnmarshalStrict(d, &pdb); err != nil {
			t.Fatal(err)
		}
		pdbs = append(pdbs, pdb)
	}
	files, err := filepath.Glob("*-deployment.yaml")
	if err != nil || len(files) != 3 {
		t.Fatalf("deployments: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			var d appsv1.Deployment
			if err := yaml.Unmarshal(documents(t, f)[0], &d); err != nil {
				t.Fatal(err)
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
				t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
			}
			if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
				t.Errorf("rolling update %+v: want maxUnavailable 0", ru)
			}
			c := d.Spec.Template.Spec.Containers[0]
			if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("probes: liveness %+v readiness %+v", c.LivenessProbe, c.ReadinessProbe)
			}
			if d.Name != "vpa-admission-controller" && !slices.Contains(c.Args, "--leader-elect=true") {
				t.Errorf("args %q: a replicated loop needs --leader-elect=true", c.Args)
			}
			covered := false
			for _, pdb := range pdbs {
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil {
					t.Fatal(err)
				}
				if pdb.Namespace == d.Namespace && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
					covered = pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1
				}
			}
			if !covered {
				t.Error("no PodDisruptionBudget with maxUnavailable 1 selects its pods")
			}
		})
	}
}
