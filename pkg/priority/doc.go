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
