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

// Package target resolves what a VerticalPodAutoscaler points at and which VPA
// controls a pod. It is shared by the recommender, the updater and the
// admission controller.
//
// # Resolving targets
//
// A Resolver is built once per component from listers of the well-known
// controllers (Listers, usually served by informers that keep only what
// TrimWorkload keeps) and a ScaleGetter for every other kind:
//
//	r, err := target.NewForConfig(restConfig, listers, target.Options{})
//
// Every component serves them from pkg/informers' lean, trimmed informers
// (IndexerWorkloads); Listers serves client-go's typed listers, which tests
// use. ScaleClient, the ScaleGetter NewForConfig uses,
// finds a kind's resource and scale subresource from the API server's
// discovery documents and reads the subresource as JSON, so this package links
// neither client-go's discovery client nor its all-groups scheme.
//
// The well-known kinds (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
// CronJob, ReplicationController, and Node as an owner) are read from the
// informers and recognised by kind, as upstream does. Any other kind is read
// through its scale subresource; successful scale lookups are cached for
// Options.ScaleCacheTTL and failed ones for Options.ErrorCacheTTL.
//
//   - Resolver.Selector(ctx, vpa) returns the label selector of the VPA's
//     targetRef: spec.selector of the well-known kinds, the job template's
//     labels for a CronJob, the map selector of a ReplicationController, and
//     status.selector of the scale subresource otherwise.
//   - Resolver.TopmostController(ctx, ref) walks ownerReferences (the owner with
//     controller=true) up from ref and returns the topmost well-known or
//     scalable controller on the way.
//   - Resolver.PodController(ctx, pod) is TopmostController starting at the
//     pod's controlling owner; nil when the pod has no such owner.
//   - Resolver.Resolve(ctx, vpa) combines both for one VPA: it returns a Target
//     (the VPA, its targetRef and its selector) or a *ConfigError whose Message
//     is the text of upstream's ConfigUnsupported condition ("Cannot read
//     targetRef...", "The target ... has a parent controller but it should
//     point to a topmost well-known or scalable controller", ...).
//
// # Matching pods to VPAs
//
// A Matcher indexes resolved Targets by namespace. Matcher.ControllingVPA(pod,
// podController) returns the Target that controls a pod: same namespace, the
// pod's topmost controller equals the targetRef (kind and name), and the
// selector matches the pod's labels. When several VPAs qualify the Stronger one
// wins: the older creationTimestamp, then the lexically smaller name.
// Matcher.Selecting(namespace, labels) returns every Target whose selector matches the pod,
// which is how the recommender attributes usage.
//
// Nothing here writes to the API server. A Resolver is safe for concurrent
// use; a Matcher is immutable once built.
package target
