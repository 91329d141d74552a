// Package v1 holds the autoscaling.k8s.io/v1 API: VerticalPodAutoscaler and
// VerticalPodAutoscalerCheckpoint. The JSON names match the upstream VPA API
// exactly, so existing manifests and checkpoints round-trip unchanged.
//
// +k8s:deepcopy-gen=package
// +groupName=autoscaling.k8s.io
package v1
