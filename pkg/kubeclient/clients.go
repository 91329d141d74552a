package kubeclient

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned/typed/autoscaling/v1"
)

// Clients are the REST clients of every group version the components use:
// the built-in ones over the lean scheme (protobuf), the VPA group's
// generated client (JSON, as custom resources speak only JSON). Every
// component builds its informers, writes and events from one Clients.
type Clients struct {
	Core                  rest.Interface // core/v1
	Apps                  rest.Interface // apps/v1
	Batch                 rest.Interface // batch/v1
	Coordination          rest.Interface // coordination.k8s.io/v1
	AdmissionRegistration rest.Interface // admissionregistration.k8s.io/v1
	VPA                   vpaclient.AutoscalingV1Interface
}

// NewClients builds Clients from cfg. The clients share one transport
// (client-go caches it per configuration) and one rate limiter per client.
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
	if c.Coordination, err = RESTClient(cfg, coordinationv1.SchemeGroupVersion); err != nil {
		return c, err
	}
	if c.AdmissionRegistration, err = RESTClient(cfg, admissionregistrationv1.SchemeGroupVersion); err != nil {
		return c, err
	}
	if c.VPA, err = vpaclient.NewForConfig(cfg); err != nil {
		return c, fmt.Errorf("building the VPA client: %w", err)
	}
	return c, nil
}

var parameterCodec = runtime.NewParameterCodec(builtinScheme)

// Pods is a typed client of the pods in namespace, with the methods of
// client-go's typed pod client that the components call (Get, List, Create,
// Update, Patch with subresources such as "resize", Delete).
func (c Clients) Pods(namespace string) *gentype.ClientWithList[*corev1.Pod, *corev1.PodList] {
	return gentype.NewClientWithList("pods", c.Core, parameterCodec, namespace,
		func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} },
		gentype.PrefersProtobuf[*corev1.Pod]())
}

// Events is a typed client of the core/v1 Events in namespace.
func (c Clients) Events(namespace string) *gentype.ClientWithList[*corev1.Event, *corev1.EventList] {
	return gentype.NewClientWithList("events", c.Core, parameterCodec, namespace,
		func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} },
		gentype.PrefersProtobuf[*corev1.Event]())
}

// MutatingWebhookConfigurations is a typed client of the cluster's
// MutatingWebhookConfigurations.
func (c Clients) MutatingWebhookConfigurations() *gentype.ClientWithList[*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfigurationList] {
	return gentype.NewClientWithList("mutatingwebhookconfigurations", c.AdmissionRegistration, parameterCodec, "",
		func() *admissionregistrationv1.MutatingWebhookConfiguration {
			return &admissionregistrationv1.MutatingWebhookConfiguration{}
		},
		func() *admissionregistrationv1.MutatingWebhookConfigurationList {
			return &admissionregistrationv1.MutatingWebhookConfigurationList{}
		},
		gentype.PrefersProtobuf[*admissionregistrationv1.MutatingWebhookConfiguration]())
}

// Evict posts a policy/v1 Eviction for the pod it names, so the API server
// enforces PodDisruptionBudgets. A refusal is an apierrors error
// (IsTooManyRequests when a budget does not allow it now).
func (c Clients) Evict(ctx context.Context, eviction *policyv1.Eviction) error {
	return c.Core.Post().Namespace(eviction.Namespace).Resource("pods").Name(eviction.Name).
		SubResource("eviction").Body(eviction).Do(ctx).Error()
}

// EventSink writes the events of a record.EventBroadcaster through the lean
// core/v1 client, each in its own namespace.
type EventSink struct {
	Clients Clients
}

var _ record.EventSink = EventSink{}

// Create implements record.EventSink.
func (s EventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.Clients.Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

// Update implements record.EventSink.
func (s EventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.Clients.Events(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

// Patch implements record.EventSink: a strategic merge patch of an existing
// event (the broadcaster's count and last timestamp updates).
func (s EventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.Clients.Events(e.Namespace).Patch(context.Background(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}

// eventScheme names the kinds the components record events about.
var eventScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(vpav1.AddToScheme(s))
	return s
}()

// NewEventRecorder starts an event broadcaster writing through c and returns
// a recorder for pods and VPAs, with component as the events' source, and
// the function that stops the broadcaster.
func NewEventRecorder(ctx context.Context, c Clients, component string) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(EventSink{Clients: c})
	return b.NewRecorder(eventScheme, corev1.EventSource{Component: component}), b.Shutdown
}
