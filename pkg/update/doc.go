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

// Package update is the updater's decision, without side effects: which
// pods of a VPA to update, in which order, and which of them may be
// disrupted now. kubectl-vpa explain and report show the same decision.
//
// The package has three parts:
//
//   - the decision rule (priority.go, priority_pod.go,
//     evictionrequirements.go): whether a running pod's requests should
//     be brought to its VPA recommendation (Decide over plain values, so
//     that tools without pods, such as a replay over a usage trace, apply
//     exactly the rule the updater applies; DecidePod and PodInputFor over a
//     pod), the order of candidates (Before, SortByPriority) and the VPA's
//     evictionRequirements (MeetsEvictionRequirements);
//   - the plan for the pods of one VPA (Plan, plan.go): for each pod what the
//     rule says, whether evictionRequirements and the namespace's
//     LimitRanges let it be updated, the requests it would get, and the
//     candidates in the order the updater takes them;
//   - the Restrictions of one updater loop (restriction.go; replicas.go
//     reads the configured replicas of a pod's controller): minReplicas,
//     eviction tolerance, one disruption per replica group per loop when the
//     tolerance truncates to zero, and the fallback timers of resizes in
//     progress. Rate limits and PDBs are enforced elsewhere (the limiter in
//     the updater loop, PDBs by the API server's Eviction API).
//
// A pod is a candidate when any of these holds:
//   - an observed container's request lies outside [lowerBound, upperBound],
//     or a recommended resource has no request at all;
//   - a container was OOM-killed after running less than the quick-OOM
//     threshold, and the recommendation differs from the requests;
//   - the pod has run at least the lifetime threshold and the summed relative
//     change of its requests is at least the update threshold.
//
// Candidates are ordered scale-ups first, then by larger relative change.
package update
