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

// Package history is the recommender's Prometheus history provider
// (--storage=prometheus): it reads containers' past CPU and memory usage from
// cAdvisor series in Prometheus, and the pods' labels from a pod-labels
// metric, so that a new recommender (or a new VPA) starts from days of
// history instead of none.
//
// It issues upstream's queries: rate(<cpu metric>{selector}[resolution]) and
// <memory metric>{selector} as range queries over --history-length at a step
// of --history-resolution, and an instant query of --metric-for-pod-labels.
// Beyond upstream:
//   - history is fetched one namespace at a time (the namespaces of the VPAs
//     that wait for it), and each range is split in time so that no query
//     asks for more points per series than Prometheus serves; a query that
//     Prometheus refuses for loading too many samples is split again;
//   - failed fetches are retried with backoff (Loader), and the VPAs that
//     wait say so in their FetchingHistory condition;
//   - a VPA created later gets its namespace's history too;
//   - labels of pods that still exist come from the API server; the
//     pod-labels metric is needed only for pods that are gone;
//   - the range is aligned to the resolution, so two fetches of the same
//     data give the same samples.
package history
