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

// Package v1beta2 describes autoscaling.k8s.io/v1beta2, the version upstream VPA stored its
// objects in before v1. It exists only so that hack/update-crds.sh writes it into the
// CustomResourceDefinitions as a version that is neither served nor stored: a cluster that once
// stored v1beta2 objects lists it in the CRD's status.storedVersions, and the API server refuses a
// CRD that drops a stored version. Nothing reads or writes these types; no clients, listers or
// deepcopy functions are generated for them, and the components use only v1.
//
// +groupName=autoscaling.k8s.io
package v1beta2
