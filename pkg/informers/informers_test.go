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

package informers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/target"
)

// listServer serves one list per resource path and holds plain watches open
// until the client goes; a streaming list (sendInitialEvents) is refused, so
// informers fall back to list and watch as they do against API servers
// without it.
func listServer(t *testing.T, lists map[string]any) kubeclient.Clients {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			if r.URL.Query().Get("sendInitialEvents") == "true" {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
					Status: metav1.StatusFailure, Code: http.StatusBadRequest, Message: "streaming lists are not served here"})
				return
			}
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		list, ok := lists[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: "no list for " + r.URL.Path})
			return
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	c, err := kubeclient.NewClients(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func emptyList(apiVersion, kind string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"resourceVersion": "1"}, "items": []any{}}
}

func list(apiVersion, kind string, items ...any) map[string]any {
	l := emptyList(apiVersion, kind)
	l["items"] = items
	return l
}

func TestSetServesTrimmedWorkloadsVPAsAndMergedLimitRanges(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img"}}}}
	limits := func(name, maxCPU string) corev1.LimitRange {
		return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, ResourceVersion: "1"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(maxCPU)}}}}}
	}
	c := listServer(t, map[string]any{
		"/apis/apps/v1/deployments": list("apps/v1", "DeploymentList", appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", ResourceVersion: "1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: sel, Template: template}}),
		"/apis/apps/v1/daemonsets": list("apps/v1", "DaemonSetList", appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "agent", ResourceVersion: "1"},
			Spec:       appsv1.DaemonSetSpec{Selector: sel, Template: template}, Status: appsv1.DaemonSetStatus{NumberReady: 1, DesiredNumberScheduled: 2}}),
		"/apis/apps/v1/replicasets":      emptyList("apps/v1", "ReplicaSetList"),
		"/apis/apps/v1/statefulsets":     emptyList("apps/v1", "StatefulSetList"),
		"/apis/batch/v1/jobs":            emptyList("batch/v1", "JobList"),
		"/apis/batch/v1/cronjobs":        emptyList("batch/v1", "CronJobList"),
		"/api/v1/replicationcontrollers": emptyList("v1", "ReplicationControllerList"),
		"/api/v1/limitranges":            list("v1", "LimitRangeList", limits("a", "2"), limits("b", "1")),
		"/apis/autoscaling.k8s.io/v1/verticalpodautoscalers": list("autoscaling.k8s.io/v1", "VerticalPodAutoscalerList",
			vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", ResourceVersion: "1",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}),
	})
	var set Set
	workloads := set.AddWorkloads(c, "")
	vpas := set.AddVPAs(c, "", nil)
	limitRanges := set.AddLimitRanges(c, "")
	if len(workloads.Informers) != 7 || len(workloads.Indexers) != 7 {
		t.Fatalf("%d informers, %d indexers, want one of each per well-known kind", len(workloads.Informers), len(workloads.Indexers))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set.Start(ctx)
	if err := set.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	tests := map[string]struct {
		kind, name string
		replicas   int32
	}{
		"a Deployment's spec.replicas": {target.KindDeployment, "web", 3},
		"a DaemonSet's desired pods":   {target.KindDaemonSet, "agent", 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w, err := workloads.Indexers.Workload(tc.kind, "team", tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if w.Replicas == nil || *w.Replicas != tc.replicas {
				t.Errorf("replicas %v, want %d", w.Replicas, tc.replicas)
			}
			if _, trimmed := workloads.Indexers[tc.kind].List()[0].(*target.Workload); !trimmed {
				t.Errorf("cached %T, want the trimmed *target.Workload", workloads.Indexers[tc.kind].List()[0])
			}
		})
	}
	objs := vpas.GetIndexer().List()
	if len(objs) != 1 {
		t.Fatalf("%d VPAs cached, want 1", len(objs))
	}
	if vpa := objs[0].(*vpav1.VerticalPodAutoscaler); vpa.ManagedFields != nil {
		t.Errorf("cached VPA keeps its managed fields")
	}
	lr := limitRanges("team")
	if len(lr.Items) != 2 || lr.Container == nil {
		t.Fatalf("limit ranges of team = %+v, want both, merged", lr)
	}
	if got := lr.Container.Max[corev1.ResourceCPU]; got.String() != "1" {
		t.Errorf("merged container max cpu %s, want the lower max, 1", got.String())
	}
	if other := limitRanges("other"); len(other.Items) != 0 || other.Container != nil {
		t.Errorf("limit ranges of a namespace without any = %+v, want none", other)
	}
}

func TestWaitForSyncEndsWithTheContext(t *testing.T) {
	c := listServer(t, map[string]any{}) // every list fails
	var set Set
	set.AddLimitRanges(c, "")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	set.Start(ctx)
	err := set.WaitForSync(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForSync = %v, want the context's deadline", err)
	}
	if !strings.Contains(err.Error(), "deadline") {
		t.Errorf("error %q does not say why", err)
	}
}
