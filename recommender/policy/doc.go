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

// Package policy is the recommender's policy controller: it keeps exactly
// one managed VerticalPodAutoscaler for every workload that a
// VerticalPodAutoscalerPolicy (openvpa.io/v1alpha1) or its namespace's
// openvpa.io/vpa-update-mode label selects, and none for a workload that a
// user's own VPA covers.
//
// It runs on the recommender's leader (beside the loop; with --shards under
// a Lease of its own): the recommender already watches every kind of
// workload for its target resolver, owns the VPAs' status, and is the one
// component whose replicas elect a single writer in every deployment shape.
//
// A namespace is its unit of work: each change to a namespace, workload,
// VPA or policy queues the namespaces it touches, and each namespace is
// planned from the caches alone (plan.go, a pure function) and written
// (controller.go). Nothing is written when the plan matches the cluster.
package policy
