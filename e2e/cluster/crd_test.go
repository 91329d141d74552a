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

package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openvpa/openvpa/e2e/framework"
)

var vpaResource = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}

func TestVPACRDPrinterColumns(t *testing.T) {
	t.Parallel()
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	ctx := context.Background()

	c.InstallCRDs(t)

	vpa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1",
		"kind":       "VerticalPodAutoscaler",
		"metadata":   map[string]any{"name": "web"},
		"spec": map[string]any{
			"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"updatePolicy": map[string]any{"updateMode": "Recreate"},
		},
	}}
	// Discovery of a just-established CRD can lag by a moment.
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		_, err := c.Dynamic.Resource(vpaResource).Namespace(ns).Create(ctx, vpa, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		return err == nil, err
	})

	// Fill the status the way the recommender would, so every column has a value.
	status := map[string]any{
		"recommendation": map[string]any{"containerRecommendations": []any{map[string]any{
			"containerName": "app",
			"target":        map[string]any{"cpu": "250m", "memory": "128Mi"},
			"lowerBound":    map[string]any{"cpu": "100m", "memory": "64Mi"},
			"upperBound":    map[string]any{"cpu": "1", "memory": "1Gi"},
		}}},
		"conditions": []any{map[string]any{
			"type": "RecommendationProvided", "status": "True",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}},
	}
	got, err := c.Dynamic.Resource(vpaResource).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Object["status"] = status
	if _, err := c.Dynamic.Resource(vpaResource).Namespace(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating VPA status: %v", err)
	}

	out := c.Kubectl(t, "get", "vpa", "--namespace", ns)
	t.Logf("kubectl get vpa:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get vpa printed %d lines, want a header and one VPA", len(lines))
	}
	if header := strings.Fields(lines[0]); strings.Join(header, " ") != "NAME MODE CPU MEM PROVIDED AGE" {
		t.Errorf("header = %v, want NAME MODE CPU MEM PROVIDED AGE", header)
	}
	row := strings.Fields(lines[1])
	if len(row) != 6 || strings.Join(row[:5], " ") != "web Recreate 250m 128Mi True" {
		t.Errorf("row = %v, want web Recreate 250m 128Mi True <age>", row)
	}
}
