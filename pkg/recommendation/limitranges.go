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

package recommendation

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/openvpa/openvpa/pkg/limitrange"
)

// LimitRanges is limitrange.Merged under its former name.
//
// Deprecated: use limitrange.Merged. Kept only while recommender/loop still
// names it; remove it with that use.
type LimitRanges = limitrange.Merged

// MergeLimitRanges is limitrange.Merge under its former name.
//
// Deprecated: use limitrange.Merge. Kept only while recommender/loop's tests
// still name it; remove it with that use.
func MergeLimitRanges(ranges []*corev1.LimitRange) LimitRanges { return limitrange.Merge(ranges) }
