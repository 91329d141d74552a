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

package framework

import (
	"fmt"
	"strings"
)

// CustomKindCRD is the YAML of a namespaced CustomResourceDefinition of kind in group, version v1,
// with a status subresource and any fields. With scale, it also has the scale subresource, read
// from .spec.replicas, .status.replicas and .status.selector, so a VPA can target its objects.
func CustomKindCRD(group, kind, plural string, scale bool) string {
	sub := "      status: {}\n"
	if scale {
		sub += "      scale:\n        specReplicasPath: .spec.replicas\n        statusReplicasPath: .status.replicas\n        labelSelectorPath: .status.selector\n"
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[1]s
spec:
  group: %[1]s
  names: {kind: %[3]s, plural: %[2]s, singular: %[4]s, listKind: %[3]sList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
%[5]s    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, group, plural, kind, strings.ToLower(kind), sub)
}
