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

// Package migration runs the shell blocks of docs/migration.md, verbatim, against a control plane
// of its own (a second instance of the local cluster, on free ports) made to look like a cluster
// running upstream VPA: upstream's CRDs with v1beta2 in status.storedVersions (objects really
// stored as v1beta2), upstream's components, roles and names in kube-system, installed from
// manifests or by a Helm release, and VPAs and checkpoints. After each path of the document it
// checks that no VPA and no checkpoint was lost or changed: the same UIDs, the same spec and
// status. The shared cluster is never touched: the paths replace cluster-wide CRDs and
// kube-system objects that the other packages rely on.
//
// A block runs for a path when its info string names it: ```sh migrate:manifests runs in the
// path "manifests"; a block may name several paths. Blocks run in the document's order, with
// bash -euo pipefail, the cluster's kubectl and helm first on PATH, KUBECONFIG set, and the
// variables the document lists.
package migration
