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

// Package priority is the updater's decision rule: whether a running pod's
// requests should be brought to its VPA recommendation, and in which order
// candidate pods are updated.
//
// The rule has a pure core over plain values (Decide, Less, Sort,
// MeetsEvictionRequirements) so that tools without pods, such as a replay
// over a usage trace, apply exactly the rule the updater applies, and a
// pod-level wrapper (PodInputFor, Calculator) used by the updater.
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
package priority
