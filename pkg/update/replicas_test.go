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

package update

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/openvpa/openvpa/pkg/target"
)

// TestReplicaCounterReadsTrimmedCaches checks the configured replicas the
// updater reads from its trimmed controller caches, as upstream reads them
// from full objects.
func TestReplicaCounterReadsTrimmedCaches(t *testing.T) {
	idx := target.IndexerWorkloads{}
	add := func(kind string, obj any) {
		if idx[kind] == nil {
			idx[kind] = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}
		trimmed, err := target.TrimWorkload(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := idx[kind].Add(trimmed); err != nil {
			t.Fatal(err)
		}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }
	add(target.KindReplicaSet, &appsv1.ReplicaSet{ObjectMeta: meta("rs"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}})
	add(target.KindReplicaSet, &appsv1.ReplicaSet{ObjectMeta: meta("scaled-to-zero"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0)}})
	add(target.KindStatefulSet, &appsv1.StatefulSet{ObjectMeta: meta("ss"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)}})
	add(target.KindDaemonSet, &appsv1.DaemonSet{ObjectMeta: meta("ds"), Status: appsv1.DaemonSetStatus{NumberReady: 4, DesiredNumberScheduled: 6}})
	add(target.KindReplicationController, &corev1.ReplicationController{ObjectMeta: meta("rc"), Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](5)}})
	c := WorkloadCounter{Workloads: idx}

	tests := map[string]struct {
		kind, name string
		live       int
		want       int
		wantErr    string
	}{
		"replicaset spec.replicas":      {kind: "ReplicaSet", name: "rs", want: 3},
		"statefulset spec.replicas":     {kind: "StatefulSet", name: "ss", want: 2},
		"daemonset counts desired pods": {kind: "DaemonSet", name: "ds", want: 6},
		"replicationcontroller":         {kind: "ReplicationController", name: "rc", want: 5},
		"job counts its live pods":      {kind: "Job", name: "any", live: 7, want: 7},
		"zero replicas is an error":     {kind: "ReplicaSet", name: "scaled-to-zero", wantErr: "no replicas configured"},
		"a missing owner is an error":   {kind: "ReplicaSet", name: "gone", wantErr: "not found"},
		"other kinds are not supported": {kind: "Deployment", name: "d", wantErr: "unsupported controller kind Deployment"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := c.ConfiguredReplicas("ns", metav1.OwnerReference{Kind: tc.kind, Name: tc.name}, tc.live)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ConfiguredReplicas = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
