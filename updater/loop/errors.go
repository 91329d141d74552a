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

package loop

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// isNodeCapacity reports whether a resize was refused as Forbidden with a
// NodeCapacity cause, i.e. the pod cannot fit its node.
func isNodeCapacity(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) {
		return false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == "NodeCapacity" {
				return true
			}
		}
	}
	return false
}
