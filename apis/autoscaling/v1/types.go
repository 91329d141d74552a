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

package v1

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VerticalPodAutoscaler is the configuration for a vertical pod autoscaler,
// which automatically manages pod resources based on historical and real time
// resource utilization.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=verticalpodautoscalers,shortName=vpa,scope=Namespaced
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes/kubernetes/pull/63797"
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.updatePolicy.updateMode"
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.recommendation.containerRecommendations[0].target.cpu"
// +kubebuilder:printcolumn:name="Mem",type="string",JSONPath=".status.recommendation.containerRecommendations[0].target.memory"
// +kubebuilder:printcolumn:name="Provided",type="string",JSONPath=".status.conditions[?(@.type=='RecommendationProvided')].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="MinReplicas",type="integer",JSONPath=".spec.updatePolicy.minReplicas",priority=1
// +kubebuilder:printcolumn:name="OOMSeconds",type="integer",JSONPath=".spec.updatePolicy.evictAfterOOMSeconds",priority=1
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

// VerticalPodAutoscalerRecommenderSelector points a VPA at a recommender by name.
type VerticalPodAutoscalerRecommenderSelector struct {
	// Name of the recommender responsible for generating recommendation for this object.
	Name string `json:"name"`
}

// VerticalPodAutoscalerSpec is the specification of the behavior of the autoscaler.
type VerticalPodAutoscalerSpec struct {
	// TargetRef points to the controller managing the set of pods for the
	// autoscaler to control, e.g. a Deployment or a StatefulSet. It may point to
	// any controller that implements the scale subresource.
	// +structType=atomic
	TargetRef *autoscalingv1.CrossVersionObjectReference `json:"targetRef"`

	// Describes the rules on how changes are applied to the pods.
	// If not specified, all fields in the PodUpdatePolicy are set to their default values.
	// +optional
	UpdatePolicy *PodUpdatePolicy `json:"updatePolicy,omitempty"`

	// Controls how the autoscaler computes recommended resources.
	// +optional
	ResourcePolicy *PodResourcePolicy `json:"resourcePolicy,omitempty"`

	// Recommender responsible for generating recommendation for this object.
	// An empty list means the default recommender. Only one recommender is supported.
	// +optional
	Recommenders []*VerticalPodAutoscalerRecommenderSelector `json:"recommenders,omitempty"`

	// StartupBoost controls a temporary boost of resources while containers start.
	// +optional
	StartupBoost *StartupBoost `json:"startupBoost,omitempty"`
}

// EvictionChangeRequirement names a relation between the recommended target and the current requests.
// +kubebuilder:validation:Enum=TargetHigherThanRequests;TargetLowerThanRequests
type EvictionChangeRequirement string

const (
	// TargetHigherThanRequests allows an eviction only when the target is higher than the requests.
	TargetHigherThanRequests EvictionChangeRequirement = "TargetHigherThanRequests"
	// TargetLowerThanRequests allows an eviction only when the target is lower than the requests.
	TargetLowerThanRequests EvictionChangeRequirement = "TargetLowerThanRequests"
)

// EvictionRequirement restricts evictions to recommendations that change the
// listed resources in the given direction.
type EvictionRequirement struct {
	// Resources the requirement applies to.
	Resources []corev1.ResourceName `json:"resources"`
	// ChangeRequirement is the relation of target to requests that must hold.
	ChangeRequirement EvictionChangeRequirement `json:"changeRequirement"`
}

// PodUpdatePolicy describes the rules on how changes are applied to the pods.
type PodUpdatePolicy struct {
	// Controls when autoscaler applies changes to the pod resources.
	// The default is Recreate.
	// +optional
	UpdateMode *UpdateMode `json:"updateMode,omitempty"`

	// Minimal number of replicas which need to be alive for the updater to
	// attempt a pod eviction (pending and other pods that are not running count as not alive).
	// Overrides the global --min-replicas flag of the updater.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// EvictionRequirements is a list of requirements that all must hold for a pod to be evicted.
	// +optional
	EvictionRequirements []*EvictionRequirement `json:"evictionRequirements,omitempty"`

	// EvictAfterOOMSeconds overrides the updater's --evict-after-oom-threshold for this VPA.
	// +kubebuilder:validation:Minimum=1
	// +optional
	EvictAfterOOMSeconds *int32 `json:"evictAfterOOMSeconds,omitempty"`
}

// UpdateMode controls when the autoscaler applies changes to the pod resources.
// +kubebuilder:validation:Enum=Off;Initial;Recreate;InPlaceOrRecreate;InPlace;Auto
type UpdateMode string

const (
	// UpdateModeOff means recommendations are computed but never applied.
	UpdateModeOff UpdateMode = "Off"
	// UpdateModeInitial means resources are set only when a pod is created.
	UpdateModeInitial UpdateMode = "Initial"
	// UpdateModeRecreate means resources are set at creation and applied to
	// running pods by evicting them.
	UpdateModeRecreate UpdateMode = "Recreate"
	// UpdateModeAuto behaves exactly like Recreate.
	//
	// Deprecated: use Recreate, InPlaceOrRecreate or InPlace.
	UpdateModeAuto UpdateMode = "Auto"
	// UpdateModeInPlaceOrRecreate resizes running pods in place and falls back
	// to eviction when the resize cannot be done.
	UpdateModeInPlaceOrRecreate UpdateMode = "InPlaceOrRecreate"
	// UpdateModeInPlace resizes running pods in place and never evicts them.
	UpdateModeInPlace UpdateMode = "InPlace"
)

// PodResourcePolicy controls how the autoscaler computes the recommended
// resources for the containers of a pod.
type PodResourcePolicy struct {
	// Per-container resource policies. A policy named "*" applies to every
	// container without a policy of its own.
	// +optional
	// +patchMergeKey=containerName
	// +patchStrategy=merge
	ContainerPolicies []ContainerResourcePolicy `json:"containerPolicies,omitempty" patchStrategy:"merge" patchMergeKey:"containerName"`
}

// ContainerResourcePolicy controls how the autoscaler computes the
// recommended resources for one container.
type ContainerResourcePolicy struct {
	// Name of the container or DefaultContainerResourcePolicy ("*"), in which
	// case the policy is used by the containers that have no policy of their own.
	ContainerName string `json:"containerName,omitempty"`

	// Whether autoscaler is enabled for the container. The default is "Auto".
	// +optional
	Mode *ContainerScalingMode `json:"mode,omitempty"`

	// Specifies the minimal amount of resources that will be recommended
	// for the container. The default is no minimum.
	// +optional
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`

	// Specifies the maximum amount of resources that will be recommended
	// for the container. The default is no maximum.
	// +optional
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`

	// Specifies the type of recommendations that will be computed
	// (and possibly applied) by VPA. If not specified, the default of [cpu, memory] is used.
	// +optional
	ControlledResources *[]corev1.ResourceName `json:"controlledResources,omitempty"`

	// Specifies which resource values should be controlled.
	// The default is "RequestsAndLimits".
	// +optional
	ControlledValues *ContainerControlledValues `json:"controlledValues,omitempty"`

	// OOMBumpUpRatio is the ratio by which memory is increased after an OOM kill.
	// +optional
	OOMBumpUpRatio *resource.Quantity `json:"oomBumpUpRatio,omitempty"`

	// OOMMinBumpUp is the minimal increase of memory after an OOM kill.
	// +optional
	OOMMinBumpUp *resource.Quantity `json:"oomMinBumpUp,omitempty"`

	// MemoryAggregationIntervalSeconds is the length of one memory peak
	// aggregation window, in seconds.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MemoryAggregationIntervalSeconds *int32 `json:"memoryAggregationIntervalSeconds,omitempty"`

	// MemoryAggregationIntervalCount is the number of memory peak aggregation
	// windows kept in the memory history.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MemoryAggregationIntervalCount *int64 `json:"memoryAggregationIntervalCount,omitempty"`

	// StartupBoost overrides the pod-level startup boost for this container.
	// +optional
	StartupBoost *StartupBoost `json:"startupBoost,omitempty"`
}

const (
	// DefaultContainerResourcePolicy is the container name of the policy that
	// applies to every container without a policy of its own.
	DefaultContainerResourcePolicy = "*"
)

// ContainerScalingMode controls whether autoscaler is enabled for a specific container.
// +kubebuilder:validation:Enum=Auto;Off
type ContainerScalingMode string

const (
	// ContainerScalingModeAuto means autoscaling is enabled for a container.
	ContainerScalingModeAuto ContainerScalingMode = "Auto"
	// ContainerScalingModeOff means autoscaling is disabled for a container.
	ContainerScalingModeOff ContainerScalingMode = "Off"
)

// ContainerControlledValues controls which resource values are autoscaled.
// +kubebuilder:validation:Enum=RequestsAndLimits;RequestsOnly
type ContainerControlledValues string

const (
	// ContainerControlledValuesRequestsAndLimits means resource requests and limits are scaled.
	ContainerControlledValuesRequestsAndLimits ContainerControlledValues = "RequestsAndLimits"
	// ContainerControlledValuesRequestsOnly means only requests are scaled.
	ContainerControlledValuesRequestsOnly ContainerControlledValues = "RequestsOnly"
)

// StartupBoost describes a temporary boost of resources at container start.
type StartupBoost struct {
	// CPU is the boost of CPU.
	// +optional
	CPU *GenericStartupBoost `json:"cpu,omitempty"`
}

// StartupBoostType names how a boost is expressed.
// +kubebuilder:validation:Enum=Factor;Quantity
type StartupBoostType string

const (
	// FactorStartupBoostType multiplies the recommendation by Factor.
	FactorStartupBoostType StartupBoostType = "Factor"
	// QuantityStartupBoostType sets the resource to Quantity.
	QuantityStartupBoostType StartupBoostType = "Quantity"
)

// GenericStartupBoost is the boost of one resource.
// +kubebuilder:validation:XValidation:rule="(self.type == 'Factor') == has(self.factor)",message="factor is required when type is Factor and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="(self.type == 'Quantity') == has(self.quantity)",message="quantity is required when type is Quantity and forbidden otherwise"
type GenericStartupBoost struct {
	// Type is Factor or Quantity.
	Type StartupBoostType `json:"type"`
	// Factor multiplies the recommendation while the boost lasts.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Factor *int32 `json:"factor,omitempty"`
	// Quantity is the boosted amount of the resource.
	// +optional
	Quantity *resource.Quantity `json:"quantity,omitempty"`
	// DurationSeconds is how long the boost lasts after the container is ready.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	DurationSeconds *int32 `json:"durationSeconds,omitempty"`
}

// VerticalPodAutoscalerStatus describes the runtime state of the autoscaler.
type VerticalPodAutoscalerStatus struct {
	// The most recently computed amount of resources recommended by the
	// autoscaler for the controlled pods.
	// +optional
	Recommendation *RecommendedPodResources `json:"recommendation,omitempty"`

	// Conditions is the set of conditions required for this autoscaler to scale its target,
	// and indicates whether or not those conditions are met.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []VerticalPodAutoscalerCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ObservedGeneration is the generation of the VPA spec the status reflects.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
}

// RecommendedPodResources is the recommendation of resources computed by the
// autoscaler. It contains a recommendation for each container in the pod
// (except for those with ContainerScalingMode set to Off).
type RecommendedPodResources struct {
	// Resources recommended by the autoscaler for each container.
	// +optional
	ContainerRecommendations []RecommendedContainerResources `json:"containerRecommendations,omitempty"`
}

// RecommendedContainerResources is the recommendation of resources computed by
// the autoscaler for a specific container.
type RecommendedContainerResources struct {
	// Name of the container.
	ContainerName string `json:"containerName,omitempty"`
	// Recommended amount of resources. Observes ContainerResourcePolicy.
	Target corev1.ResourceList `json:"target"`
	// Minimum recommended amount of resources. Observes ContainerResourcePolicy.
	// +optional
	LowerBound corev1.ResourceList `json:"lowerBound,omitempty"`
	// Maximum recommended amount of resources. Observes ContainerResourcePolicy.
	// +optional
	UpperBound corev1.ResourceList `json:"upperBound,omitempty"`
	// The most recent recommended resources target computed by the autoscaler
	// for the controlled pods, based only on actual resource usage, not taking
	// into account the ContainerResourcePolicy.
	// +optional
	UncappedTarget corev1.ResourceList `json:"uncappedTarget,omitempty"`
}

// VerticalPodAutoscalerConditionType names a condition of a VPA.
type VerticalPodAutoscalerConditionType string

const (
	// RecommendationProvided indicates whether the VPA recommender was able to calculate a recommendation.
	RecommendationProvided VerticalPodAutoscalerConditionType = "RecommendationProvided"
	// LowConfidence indicates whether the recommender has little history for at least one container.
	LowConfidence VerticalPodAutoscalerConditionType = "LowConfidence"
	// NoPodsMatched indicates that label selector used with VPA object didn't match any pods.
	NoPodsMatched VerticalPodAutoscalerConditionType = "NoPodsMatched"
	// FetchingHistory indicates that the recommender is still loading history for this VPA.
	FetchingHistory VerticalPodAutoscalerConditionType = "FetchingHistory"
	// ConfigDeprecated indicates that this VPA configuration is deprecated.
	ConfigDeprecated VerticalPodAutoscalerConditionType = "ConfigDeprecated"
	// ConfigUnsupported indicates that this VPA configuration is unsupported.
	ConfigUnsupported VerticalPodAutoscalerConditionType = "ConfigUnsupported"
	// LimitRangeConflict indicates that the recommendation, capped as it
	// must be, gives this VPA's pods resources the namespace's LimitRanges
	// (or the pods' own pod-level resources) do not admit: the pods keep
	// their requests, or get them capped to the LimitRanges past the
	// resource policy. OpenVPA sets it; upstream VPA does not.
	LimitRangeConflict VerticalPodAutoscalerConditionType = "LimitRangeConflict"
	// OverlappingVPA indicates that pods of this VPA are also matched by
	// another VPA; the message names the others and the VPA the admission
	// controller applies to the pods. OpenVPA sets it; upstream VPA does not.
	OverlappingVPA VerticalPodAutoscalerConditionType = "OverlappingVPA"
	// HPAConflict indicates that a HorizontalPodAutoscaler scales this VPA's
	// target on cpu or memory, a resource the VPA also sets. OpenVPA sets
	// it; upstream VPA does not.
	HPAConflict VerticalPodAutoscalerConditionType = "HPAConflict"
	// RecommendationCappedToNode indicates that the target (and bounds) were
	// capped so that a pod fits the largest node it may be scheduled on; the
	// message names the node and the uncapped values. OpenVPA sets it;
	// upstream VPA does not.
	RecommendationCappedToNode VerticalPodAutoscalerConditionType = "RecommendationCappedToNode"
	// ResourceQuotaConflict indicates that pods get less of the
	// recommendation than it asks, or keep their requests, because the
	// namespace's ResourceQuotas leave no room for more. OpenVPA sets it;
	// upstream VPA does not.
	ResourceQuotaConflict VerticalPodAutoscalerConditionType = "ResourceQuotaConflict"
)

// VerticalPodAutoscalerCondition describes the state of a VPA at a certain point.
type VerticalPodAutoscalerCondition struct {
	// Type describes the current condition.
	Type VerticalPodAutoscalerConditionType `json:"type"`
	// Status is the status of the condition (True, False, Unknown).
	Status corev1.ConditionStatus `json:"status"`
	// LastTransitionTime is the last time the condition transitioned from one status to another.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is the reason for the condition's last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable explanation containing details about the transition.
	// +optional
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the VPA generation the condition was set for.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// VerticalPodAutoscalerList is a list of VerticalPodAutoscaler objects.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type VerticalPodAutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata"`
	// Items is the list of VPAs.
	Items []VerticalPodAutoscaler `json:"items"`
}

// VerticalPodAutoscalerCheckpoint is the checkpoint of the internal state of
// the VPA recommender that is used to restore that state after a restart.
//
// +genclient
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=verticalpodautoscalercheckpoints,shortName=vpacheckpoint,scope=Namespaced
// +kubebuilder:storageversion
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes/kubernetes/pull/63797"
type VerticalPodAutoscalerCheckpoint struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Specification of the checkpoint.
	// +optional
	Spec VerticalPodAutoscalerCheckpointSpec `json:"spec,omitempty"`

	// Data of the checkpoint.
	// +optional
	Status VerticalPodAutoscalerCheckpointStatus `json:"status,omitempty"`
}

// VerticalPodAutoscalerCheckpointSpec is the specification of the checkpoint object.
type VerticalPodAutoscalerCheckpointSpec struct {
	// Name of the VPA object that stored VerticalPodAutoscalerCheckpoint object.
	VPAObjectName string `json:"vpaObjectName,omitempty"`
	// Name of the checkpointed container.
	ContainerName string `json:"containerName,omitempty"`
}

// VerticalPodAutoscalerCheckpointStatus contains data of the checkpoint.
type VerticalPodAutoscalerCheckpointStatus struct {
	// The time when the status was last refreshed.
	// +nullable
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// Version of the format of the stored data.
	Version string `json:"version,omitempty"`
	// Checkpoint of histogram for consumption of CPU.
	CPUHistogram HistogramCheckpoint `json:"cpuHistogram,omitempty"`
	// Checkpoint of histogram for consumption of memory.
	MemoryHistogram HistogramCheckpoint `json:"memoryHistogram,omitempty"`
	// Timestamp of the first sample from the histograms.
	// +nullable
	FirstSampleStart metav1.Time `json:"firstSampleStart,omitempty"`
	// Timestamp of the last sample from the histograms.
	// +nullable
	LastSampleStart metav1.Time `json:"lastSampleStart,omitempty"`
	// Total number of samples in the histograms.
	TotalSamplesCount int `json:"totalSamplesCount,omitempty"`
}

// HistogramCheckpoint contains data needed to reconstruct the histogram.
type HistogramCheckpoint struct {
	// Reference timestamp for samples collected within this histogram.
	// +nullable
	ReferenceTimestamp metav1.Time `json:"referenceTimestamp,omitempty"`
	// Map from bucket index to bucket weight.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:XPreserveUnknownFields
	// +optional
	BucketWeights map[int]uint32 `json:"bucketWeights,omitempty"`
	// Sum of samples to be used as denominator for weights from BucketWeights.
	TotalWeight float64 `json:"totalWeight,omitempty"`
}

// VerticalPodAutoscalerCheckpointList is a list of VerticalPodAutoscalerCheckpoint objects.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type VerticalPodAutoscalerCheckpointList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata"`
	// Items is the list of checkpoints.
	Items []VerticalPodAutoscalerCheckpoint `json:"items"`
}
