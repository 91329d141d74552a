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

package v1alpha1

// NamespaceLabelSource names the namespace label as what made a managed VPA.
const NamespaceLabelSource = "namespace label " + LabelNamespaceUpdateMode

// ManagedBy says what made a VPA with these labels: "policy <name>", the
// namespace label, or "" for a VPA the policy controller does not manage.
func ManagedBy(labels map[string]string) string {
	if labels[LabelManagedBy] != ManagedByPolicyController {
		return ""
	}
	if p := labels[LabelPolicy]; p != "" {
		return "policy " + p
	}
	return NamespaceLabelSource
}
