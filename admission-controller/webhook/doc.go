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
