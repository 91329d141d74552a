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

package kubeclient

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"

	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned/typed/autoscaling/v1"
)

// Clients are the REST clients of the group versions every component reads:
// the built-in ones over the lean scheme (protobuf), the VPA group's
// generated client (JSON, as custom resources speak only JSON). Leases have
// their own client (pkg/leases). A component
// builds its informers and most writes from one Clients; the few kinds only
// one component writes have their clients in that component's package.
type Clients struct {
	Core  rest.Interface // core/v1
	Apps  rest.Interface // apps/v1
	Batch rest.Interface // batch/v1
	VPA   vpaclient.AutoscalingV1Interface
}

// NewClients builds Clients from cfg. The clients share one transport
// (client-go caches it per configuration).
func NewClients(cfg *rest.Config) (Clients, error) {
	var c Clients
	var err error
	if c.Core, err = RESTClient(cfg, corev1.SchemeGroupVersion); err != nil {
		return c, err
	}
	if c.Apps, err = RESTClient(cfg, appsv1.SchemeGroupVersion); err != nil {
		return c, err
	}
	if c.Batch, err = RESTClient(cfg, batchv1.SchemeGroupVersion); err != nil {
		return c, err
	}
	if c.VPA, err = vpaclient.NewForConfig(cfg); err != nil {
		return c, fmt.Errorf("building the VPA client: %w", err)
	}
	return c, nil
}

// parameterCodec encodes list, get and patch options for the lean clients.
var parameterCodec = runtime.NewParameterCodec(builtinScheme)

// Pods is a typed client of the pods in namespace, with the methods of
// client-go's typed pod client (Get, List, Create, Update, Patch with
// subresources such as "resize", Delete).
func (c Clients) Pods(namespace string) *gentype.ClientWithList[*corev1.Pod, *corev1.PodList] {
	return gentype.NewClientWithList("pods", c.Core, parameterCodec, namespace,
		func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} },
		gentype.PrefersProtobuf[*corev1.Pod]())
}

// Deployments is a typed client of the apps/v1 Deployments in namespace.
func (c Clients) Deployments(namespace string) *gentype.ClientWithList[*appsv1.Deployment, *appsv1.DeploymentList] {
	return gentype.NewClientWithList("deployments", c.Apps, parameterCodec, namespace,
		func() *appsv1.Deployment { return &appsv1.Deployment{} }, func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} },
		gentype.PrefersProtobuf[*appsv1.Deployment]())
}

// Events is a typed client of the core/v1 Events in namespace.
func (c Clients) Events(namespace string) *gentype.ClientWithList[*corev1.Event, *corev1.EventList] {
	return gentype.NewClientWithList("events", c.Core, parameterCodec, namespace,
		func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} },
		gentype.PrefersProtobuf[*corev1.Event]())
}
