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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/pkg/target"
)

// WorkloadCounter is the updater's ReplicaCounter: it reads configured
// replicas from the controllers' caches, as upstream: spec.replicas of ReplicaSets, StatefulSets and
// ReplicationControllers, status.desiredNumberScheduled of DaemonSets (see
// target.Workload.Replicas), and the live pods of a Job.
type WorkloadCounter struct {
	Workloads target.Workloads
}

// ConfiguredReplicas implements ReplicaCounter.
func (c WorkloadCounter) ConfiguredReplicas(namespace string, owner metav1.OwnerReference, livePods int) (int, error) {
	switch owner.Kind {
	case target.KindJob:
		return livePods, nil
	case target.KindReplicaSet, target.KindStatefulSet, target.KindReplicationController, target.KindDaemonSet:
	default:
		return 0, fmt.Errorf("unsupported controller kind %s", owner.Kind)
	}
	w, err := c.Workloads.Workload(owner.Kind, namespace, owner.Name)
	if err != nil {
		return 0, err
	}
	if owner.Kind == target.KindDaemonSet {
		if w.Replicas == nil {
			return 0, nil
		}
		return int(*w.Replicas), nil
	}
	if w.Replicas == nil || *w.Replicas == 0 {
		return 0, fmt.Errorf("%s %s/%s has no replicas configured", owner.Kind, namespace, owner.Name)
	}
	return int(*w.Replicas), nil
}
