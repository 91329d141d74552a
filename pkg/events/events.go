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

// Package events records Kubernetes Events about pods and VPAs through the
// lean core/v1 client of pkg/kubeclient, with client-go's broadcaster (its
// aggregation and spam filtering) in front.
package events

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/record"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// Sink writes a broadcaster's events, each in its own namespace.
type Sink struct {
	Clients kubeclient.Clients
}

var _ record.EventSink = Sink{}

// Create implements record.EventSink.
func (s Sink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.Clients.Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

// Update implements record.EventSink.
func (s Sink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.Clients.Events(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

// Patch implements record.EventSink: a strategic merge patch of an existing
// event (the broadcaster's count and timestamp updates).
func (s Sink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.Clients.Events(e.Namespace).Patch(context.Background(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}

// scheme names the kinds the components record events about: pods, VPAs,
// (the updater's scale points) HorizontalPodAutoscalers and (the policy
// controller) namespaces and VPA policies.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(vpav1.AddToScheme(s))
	utilruntime.Must(autoscalingv2.AddToScheme(s))
	utilruntime.Must(policyv1alpha1.AddToScheme(s))
	return s
}()

// NewRecorder starts a broadcaster writing through c and returns a
// recorder for pods and VPAs with component as the events' source, and the
// function that stops the broadcaster.
func NewRecorder(ctx context.Context, c kubeclient.Clients, component string) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(Sink{Clients: c})
	return b.NewRecorder(scheme, corev1.EventSource{Component: component}), b.Shutdown
}
