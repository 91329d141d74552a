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

// Package pod computes the JSON Patch the admission controller applies to a
// new pod: the controlling VPA's recommendation, capped by
// pkg/recommendation, written into the containers' requests and
// (proportional) limits, plus the vpaUpdates, vpaObservedContainers and
// openvpa.io/original-resources annotations (pkg/annotations).
//
// The handler never denies a pod. Pods with no controlling VPA get no patch;
// init containers and containers without a recommendation are never touched.
// Every patch is valid against the pod it was computed for: missing maps are
// created before keys are added to them, existing annotations are kept, and
// keys are escaped per RFC 6901.
package pod
