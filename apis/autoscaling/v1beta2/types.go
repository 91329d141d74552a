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

package v1beta2

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// VerticalPodAutoscaler is the v1beta2 shape of a vertical pod autoscaler, kept in the CRD,
// unserved, for clusters whose storedVersions still name v1beta2.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=verticalpodautoscalers,shortName=vpa,scope=Namespaced
// +kubebuilder:unservedversion
// +kubebuilder:deprecatedversion:warning="autoscaling.k8s.io/v1beta2 API is deprecated"
// +kubebuilder:subresource:status
type VerticalPodAutoscaler struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Specification of the behavior of the autoscaler.
	Spec VerticalPodAutoscalerSpec `json:"spec"`

	// Current information about the autoscaler.
	// +optional
	Status VerticalPodAutoscalerStatus `json:"status,omitempty"`
}

// VerticalPodAutoscalerSpec is the v1beta2 specification of the autoscaler.
type VerticalPodAutoscalerSpec struct {
	// TargetRef points to the controller managing the set of pods for the autoscaler to control.
	// +structType=atomic
	TargetRef *autoscalingv1.CrossVersionObjectReference `json:"targetRef"`

	// Describes the rules on how changes are applied to the pods.
	// +optional
	UpdatePolicy *PodUpdatePolicy `json:"updatePolicy,omitempty"`

	// Controls how the autoscaler computes recommended resources.
	// +optional
	ResourcePolicy *PodResourcePolicy `json:"resourcePolicy,omitempty"`
}

// PodUpdatePolicy describes the rules on how changes are applied to the pods.
type PodUpdatePolicy struct {
	// Controls when the autoscaler applies changes to the pod resources.
	// +optional
	UpdateMode *UpdateMode `json:"updateMode,omitempty"`
}

// UpdateMode controls when the autoscaler applies changes to the pod resources.
// +kubebuilder:validation:Enum=Off;Initial;Recreate;Auto
type UpdateMode string

// PodResourcePolicy controls how the autoscaler computes the recommended resources of a pod's
// containers.
type PodResourcePolicy struct {
	// Per-container resource policies.
	// +optional
	ContainerPolicies []ContainerResourcePolicy `json:"containerPolicies,omitempty"`
}

// ContainerResourcePolicy controls how the autoscaler computes the recommended resources of one
// container.
type ContainerResourcePolicy struct {
	// Name of the container, or "*" for the containers without a policy of their own.
	ContainerName string `json:"containerName,omitempty"`
	// Whether the autoscaler is enabled for the container.
	// +optional
	Mode *ContainerScalingMode `json:"mode,omitempty"`
	// The smallest amount of resources that will be recommended for the container.
	// +optional
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`
	// The largest amount of resources that will be recommended for the container.
	// +optional
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`
}

// ContainerScalingMode says whether the autoscaler is enabled for a container.
// +kubebuilder:validation:Enum=Auto;Off
type ContainerScalingMode string

// VerticalPodAutoscalerStatus is the v1beta2 status of the autoscaler.
type VerticalPodAutoscalerStatus struct {
	// The most recently computed amount of resources recommended for the controlled pods.
	// +optional
	Recommendation *RecommendedPodResources `json:"recommendation,omitempty"`

	// Conditions of the autoscaler.
	// +optional
	Conditions []VerticalPodAutoscalerCondition `json:"conditions,omitempty"`
}

// RecommendedPodResources holds the recommendation of each container.
type RecommendedPodResources struct {
	// Resources recommended for each container.
	// +optional
	ContainerRecommendations []RecommendedContainerResources `json:"containerRecommendations,omitempty"`
}

// RecommendedContainerResources is the recommendation for one container.
type RecommendedContainerResources struct {
	// Name of the container.
	ContainerName string `json:"containerName,omitempty"`
	// Recommended amount of resources.
	Target corev1.ResourceList `json:"target"`
	// Minimum recommended amount of resources.
	// +optional
	LowerBound corev1.ResourceList `json:"lowerBound,omitempty"`
	// Maximum recommended amount of resources.
	// +optional
	UpperBound corev1.ResourceList `json:"upperBound,omitempty"`
	// The target before the container's resource policy is applied.
	// +optional
	UncappedTarget corev1.ResourceList `json:"uncappedTarget,omitempty"`
}

// VerticalPodAutoscalerCondition describes the state of the autoscaler at a point in time.
type VerticalPodAutoscalerCondition struct {
	// Type of the condition.
	Type string `json:"type"`
	// Status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// The last time the condition changed status.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// The reason for the last change.
	// +optional
	Reason string `json:"reason,omitempty"`
	// A human-readable explanation of the last change.
	// +optional
	Message string `json:"message,omitempty"`
}

// VerticalPodAutoscalerList is a list of VerticalPodAutoscaler objects.
//
// +kubebuilder:object:root=true
type VerticalPodAutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata"`
	// The autoscalers.
	Items []VerticalPodAutoscaler `json:"items"`
}

// VerticalPodAutoscalerCheckpoint is the v1beta2 shape of a checkpoint; its spec and status are
// those of v1, unchanged between the two versions.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=verticalpodautoscalercheckpoints,shortName=vpacheckpoint,scope=Namespaced
// +kubebuilder:unservedversion
type VerticalPodAutoscalerCheckpoint struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Specification of the checkpoint.
	// +optional
	Spec vpav1.VerticalPodAutoscalerCheckpointSpec `json:"spec,omitempty"`

	// Data of the checkpoint.
	// +optional
	Status vpav1.VerticalPodAutoscalerCheckpointStatus `json:"status,omitempty"`
}

// VerticalPodAutoscalerCheckpointList is a list of VerticalPodAutoscalerCheckpoint objects.
//
// +kubebuilder:object:root=true
type VerticalPodAutoscalerCheckpointList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata"`
	// The checkpoints.
	Items []VerticalPodAutoscalerCheckpoint `json:"items"`
}
