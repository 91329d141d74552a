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

// Package promhistory reads containers' past CPU and memory usage from
// cAdvisor series in Prometheus, and pods' labels from a pod-labels metric,
// with upstream's queries and flags: rate(<cpu metric>{selector}[resolution])
// and <memory metric>{selector} as range queries over --history-length at a
// step of --history-resolution, and an instant query of
// --metric-for-pod-labels. The recommender's history provider
// (--storage=prometheus) and `kubectl vpa replay --prometheus-url` share
// it, so that both read the same points.
//
// Each range is split in time so that no query asks for more points per
// series than Prometheus serves, and a query that Prometheus refuses for
// loading too many samples is split again. Every query has a timeout, and a
// client can bound the points it reads in all (Config.MaxSamples).
package promhistory
