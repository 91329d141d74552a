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

// Package webhook is the admission controller's HTTPS side: the
// AdmissionReview endpoint (Server), TLS configuration with certificate files
// reloaded on change (CertWatcher), self-registration of the
// MutatingWebhookConfiguration as an idempotent create-or-update (Register,
// PatchCABundle), self-signed certificates for local runs (GenerateSelfSigned)
// and the upstream-named metrics (Metrics).
//
// Server answers POST requests with Content-Type application/json whose body
// (at most 5 MiB) is an AdmissionReview of admission.k8s.io/v1 or v1beta1, in
// the version asked; anything else gets a 4xx status with a message saying
// what was wrong. Pods are never denied; invalid VPAs are.
package webhook
