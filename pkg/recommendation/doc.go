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

// Package recommendation turns a VPA's stored recommendation into the
// resources a pod's containers should get. The admission controller uses it to
// patch new pods and the updater uses it to decide on, and perform, updates of
// running pods, so both act on exactly the same numbers.
//
// The steps, in order (the same order as upstream VPA):
//
//  1. Pod LimitRange (type Pod): when the pod's total would fall outside the
//     LimitRange min/max, every container's recommendation is scaled by the
//     same factor (sums of proportional limits are compared with min and max;
//     a sum of requests below min is scaled up).
//  2. Per container: the container LimitRange min and max, converted to
//     request bounds with the container's limit:request ratio; then the VPA
//     container policy minAllowed and maxAllowed (so the VPA policy wins over
//     the LimitRange); then, for controlledValues RequestsOnly, the container's
//     current limit. Resources the policy does not control are dropped and
//     containers with mode Off get nothing.
//  3. Limits: for RequestsAndLimits, each limit keeps the container's original
//     limit:request ratio (the LimitRange default limit stands in for a missing
//     limit); RequestsOnly never sets limits.
//
// Cap implements steps 1 and 2 on target, lower and upper bound; ForPod runs
// all three and returns, per pod container, the requests and limits to apply
// together with notes such as "cpu capped to maxAllowed" for the vpaUpdates
// annotation. Nothing here talks to the API server: LimitRanges are passed in,
// merged by limitrange.Merge.
package recommendation
