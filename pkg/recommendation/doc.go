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
// Capping is a pipeline of stages, each in a file named for it and called in
// order by capStages (pipeline.go), each working on the previous stage's
// output (the same order and numbers as upstream VPA):
//
//  1. Select (select.go): per container, the recommendation to cap, without
//     the resources the VPA policy does not control; containers in mode Off
//     get nothing.
//  2. LimitRange (limitrange.go; the rules themselves are pkg/limitrange's):
//     under a Pod LimitRange, when the pod's total would fall outside its
//     min/max, every container's recommendation is scaled by the same
//     factor (sums of proportional limits are compared with min and max; a
//     sum of requests below min is scaled up). Then the container
//     LimitRange min and max, converted to request bounds with the
//     container's limit:request ratio.
//  3. Policy (policy.go): the VPA container policy minAllowed and
//     maxAllowed, after the LimitRanges so that the policy wins over them.
//  4. Container limit (containerlimit.go): for controlledValues
//     RequestsOnly, the container's current limit.
//  5. Node fit (nodefit.go): with Fit.Nodes, every recommended container's
//     cpu or memory is scaled down by one factor so that the pod fits the
//     eligible node that holds the most of it (pkg/nodefit).
//  6. Proportional limits (proportional.go): for RequestsAndLimits, each
//     limit keeps the container's original limit:request ratio (the
//     LimitRange default limit stands in for a missing limit); RequestsOnly
//     never sets limits.
//
// Cap runs stages 1 to 4 (CapFit 1 to 5) on target, lower and upper
// bound. ForPod runs them all on the target and returns, per pod container, the requests and limits
// to apply together with notes such as "cpu capped to maxAllowed" for the
// vpaUpdates annotation. PlanForPod (plan.go) then checks the pod that gives
// as the API server would (Admissible) and, if it would be refused, runs the
// pipeline again with the policy stage before the LimitRange stages, so that
// the LimitRanges win; if that is refused too, the plan is empty. With
// Fit.Quota, the plan's increase is then capped to what the namespace's
// ResourceQuotas leave (quota.go). Nothing here talks to the API server:
// LimitRanges, nodes and quotas are passed in, LimitRanges merged by
// limitrange.Merge.
package recommendation
