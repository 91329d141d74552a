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

// Package nodefit says which nodes a pod may be scheduled on and how much of
// each is left for it, so that a recommendation never asks for more than
// the largest of them holds (a pod that fits no node stays Pending).
//
// The three components share it: the recommender caps the target and the
// bounds it writes, the admission controller and the updater cap what they
// apply (pkg/recommendation's node fit stage), all from the same answer.
//
//   - Constraints are what of a pod decides its nodes: the nodeSelector, the
//     required node affinity (In, NotIn, Exists, DoesNotExist, Gt, Lt;
//     metadata.name fields) and the tolerations against NoSchedule and
//     NoExecute taints, a cordoned node counting as tainted.
//   - Cache keeps the nodes and the DaemonSet pods bound to them, trimmed,
//     and computes per distinct Constraints (not per pod) the Rooms: the
//     eligible nodes with their allocatable minus the DaemonSet pods'
//     requests. A node or DaemonSet pod added, changed or removed makes the
//     next question compute them again.
//   - Best chooses, for a pod's Demand (what its other containers and its
//     init containers need) and what the plan wants, the room that keeps
//     the most of it, and what the plan may set there.
package nodefit
