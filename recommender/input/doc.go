// Package input feeds the recommender: informers for VPAs, pods (without
// managedFields, excluding Pending pods) and the well-known controllers;
// container usage samples from metrics-server (PodMetrics through
// k8s.io/metrics); and OOM kills observed from pod status transitions and
// Evicted events.
package input
