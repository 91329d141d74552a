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

// Package estimator turns the aggregated usage history of a VPA's containers
// into recommendations.
//
// An Estimator takes the merged aggregate of each container name, the VPA's
// resource policy and its annotations, and returns the recommendation list
// for the VPA status together with a confidence value per container. The
// upstream chain is the Percentile estimator (name "percentile"):
//
//	percentile → margin → confidence multiplier (bounds only) → pod minimum
//	split across containers → rounding → uncappedTarget → integer-CPU
//	post-processor → capping to minAllowed / maxAllowed
//
// The steps after the raw amounts (controlled-resources filtering, rounding,
// humanizing, uncapped target, post-processors, sorting, conversion to
// quantities) are shared: Finish implements them for any estimator that
// produces raw Amounts. Every tunable is a field of Config, whose
// DefaultConfig equals upstream's flag defaults.
package estimator
