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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// VerticalPodAutoscalerPolicy gives every workload it selects a
// VerticalPodAutoscaler, managed by the recommender's policy controller:
// created with the policy's template, updated when the policy changes, and
// removed when the workload leaves the selection or the policy is deleted.
// A VPA a user writes for the same workload always wins over a managed one.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=verticalpodautoscalerpolicies,shortName=vpapolicy,scope=Cluster,categories=openvpa
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.template.updatePolicy.updateMode"
// +kubebuilder:printcolumn:name="Priority",type="integer",JSONPath=".spec.priority"
// +kubebuilder:printcolumn:name="Selected",type="integer",JSONPath=".status.selectedWorkloads"
// +kubebuilder:printcolumn:name="Managed",type="integer",JSONPath=".status.managedVPAs"
// +kubebuilder:printcolumn:name="Conflicts",type="integer",JSONPath=".status.conflicts"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type VerticalPodAutoscalerPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec selects the workloads and says what their VPAs hold.
	Spec VerticalPodAutoscalerPolicySpec `json:"spec"`

	// Status is what the policy controller last saw of the selection.
	// +optional
	Status VerticalPodAutoscalerPolicyStatus `json:"status,omitempty"`
}

// VerticalPodAutoscalerPolicySpec selects workloads and holds the VPA
// template they get.
type VerticalPodAutoscalerPolicySpec struct {
	// NamespaceSelector selects the namespaces by their labels. An empty
	// selector selects every namespace the recommender handles (its
	// --vpa-object-namespace and --ignored-vpa-object-namespaces apply).
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// Kinds are the workload kinds the policy covers. Empty means the
	// well-known controllers: Deployment, StatefulSet, DaemonSet,
	// ReplicaSet, Job, CronJob and ReplicationController. A custom resource
	// kind is covered when it has the scale subresource.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.kind == a.kind && (has(b.apiGroup) ? b.apiGroup : '') == (has(a.apiGroup) ? a.apiGroup : '')))",message="each kind may be named once"
	Kinds []WorkloadKind `json:"kinds,omitempty"`

	// Selector selects the workloads by their own labels; unset selects
	// every workload of the kinds. A workload owned by another controller
	// (a Deployment's ReplicaSet, a CronJob's Job) is never selected: its
	// owner is.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Priority settles a workload two policies select: the higher priority
	// wins; at equal priority the older policy, then the name that sorts
	// first. The namespace label openvpa.io/vpa-update-mode wins over every
	// policy, and a VPA a user wrote wins over both.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	Priority int32 `json:"priority,omitempty"`

	// Template is the spec of each managed VPA, without its targetRef,
	// which names the workload.
	// +required
	Template VerticalPodAutoscalerTemplate `json:"template"`
}

// WorkloadKind names a kind of workload.
type WorkloadKind struct {
	// APIGroup is the kind's API group: "apps" for a Deployment, "batch" for
	// a CronJob, "" for a ReplicationController.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	APIGroup string `json:"apiGroup,omitempty"`
	// Kind is the kind, e.g. Deployment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`
}

// VerticalPodAutoscalerTemplate is what a policy stamps into each VPA.
type VerticalPodAutoscalerTemplate struct {
	// UpdatePolicy is each VPA's update policy; unset means the VPA's
	// default mode.
	// +optional
	UpdatePolicy *vpav1.PodUpdatePolicy `json:"updatePolicy,omitempty"`
	// ResourcePolicy is each VPA's resource policy.
	// +optional
	ResourcePolicy *vpav1.PodResourcePolicy `json:"resourcePolicy,omitempty"`
	// Recommenders names the recommender of each VPA; unset means the
	// default recommender.
	// +optional
	// +kubebuilder:validation:MaxItems=1
	Recommenders []*vpav1.VerticalPodAutoscalerRecommenderSelector `json:"recommenders,omitempty"`
}

// VerticalPodAutoscalerPolicyStatus is what the policy controller last saw.
type VerticalPodAutoscalerPolicyStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SelectedWorkloads counts the workloads the policy selects.
	// +optional
	SelectedWorkloads int32 `json:"selectedWorkloads"`
	// ManagedVPAs counts the selected workloads whose VPA this policy
	// provides: selected, not won by another policy or the namespace label,
	// and without a VPA of their user's.
	// +optional
	ManagedVPAs int32 `json:"managedVPAs"`
	// Conflicts counts the selected workloads that another policy or the
	// namespace label selects too.
	// +optional
	Conflicts int32 `json:"conflicts"`
	// ConflictingWorkloads names some of them (at most 10), each as
	// namespace/Kind/name, with what else selects it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	ConflictingWorkloads []string `json:"conflictingWorkloads,omitempty"`
	// Conditions: Ready (the selection is reconciled) and Conflicting
	// (another source selects some of the workloads).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VerticalPodAutoscalerPolicyList is a list of policies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type VerticalPodAutoscalerPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata"`

	// Items are the policies.
	Items []VerticalPodAutoscalerPolicy `json:"items"`
}

const (
	// LabelManagedBy marks a VPA the policy controller made and keeps.
	LabelManagedBy = "openvpa.io/managed-by"
	// ManagedByPolicyController is LabelManagedBy's value.
	ManagedByPolicyController = "vpa-policy-controller"
	// LabelPolicy names the policy that made a managed VPA; a managed VPA
	// without it was made for its namespace's LabelNamespaceUpdateMode.
	LabelPolicy = "openvpa.io/policy"
	// LabelNamespaceUpdateMode on a namespace gives every workload in it a
	// managed VPA with that update mode.
	LabelNamespaceUpdateMode = "openvpa.io/vpa-update-mode"

	// ConditionReady is True when the policy's selection is reconciled.
	ConditionReady = "Ready"
	// ConditionConflicting is True when another source selects some of the
	// policy's workloads.
	ConditionConflicting = "Conflicting"
)
