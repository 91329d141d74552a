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

package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// WebhookName is the name of the webhook inside the configuration.
const WebhookName = "vpa.k8s.io"

// DefaultConfigName is upstream's MutatingWebhookConfiguration name.
const DefaultConfigName = "vpa-webhook-config"

// Registration describes the MutatingWebhookConfiguration to maintain.
type Registration struct {
	// ConfigName is the MutatingWebhookConfiguration's name.
	ConfigName string
	// Service mode: the webhook Service namespace/name (port 443).
	ServiceNamespace, ServiceName string
	// URL mode (used when URL is not empty): https://host:port.
	URL            string
	CABundle       []byte
	TimeoutSeconds int32
	FailurePolicy  admissionregistrationv1.FailurePolicyType
	Labels         map[string]string
	// OnlyNamespace, when set, limits the webhook to that namespace.
	OnlyNamespace string
	// ExcludedNamespaces are never sent to the webhook (kube-system, the
	// webhook's own namespace and --ignored-vpa-object-namespaces).
	ExcludedNamespaces []string
}

const namespaceNameLabel = "kubernetes.io/metadata.name"

// Config builds the MutatingWebhookConfiguration.
func (r Registration) Config() *admissionregistrationv1.MutatingWebhookConfiguration {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: r.CABundle}
	if r.URL != "" {
		cc.URL = ptr.To(r.URL)
	} else {
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: r.ServiceNamespace, Name: r.ServiceName}
	}
	selector := &metav1.LabelSelector{}
	if r.OnlyNamespace != "" {
		selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{r.OnlyNamespace}}}
	} else if len(r.ExcludedNamespaces) > 0 {
		selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: r.ExcludedNamespaces}}
	}
	failure := r.FailurePolicy
	if failure == "" {
		failure = admissionregistrationv1.Ignore
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: r.ConfigName, Labels: r.Labels},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    WebhookName,
			AdmissionReviewVersions: []string{"v1", "v1beta1"},
			ClientConfig:            cc,
			Rules: []admissionregistrationv1.RuleWithOperations{
				{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
				},
				{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"autoscaling.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"verticalpodautoscalers"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
				},
			},
			FailurePolicy:      &failure,
			SideEffects:        ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:     ptr.To(r.TimeoutSeconds),
			NamespaceSelector:  selector,
			MatchPolicy:        ptr.To(admissionregistrationv1.Equivalent),
			ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			ObjectSelector:     &metav1.LabelSelector{},
		}},
	}
}

// Configurations reads and writes MutatingWebhookConfigurations: the typed
// client of kubeclient.Clients in the admission controller.
type Configurations interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error)
	Create(ctx context.Context, c *admissionregistrationv1.MutatingWebhookConfiguration, opts metav1.CreateOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error)
	Update(ctx context.Context, c *admissionregistrationv1.MutatingWebhookConfiguration, opts metav1.UpdateOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*admissionregistrationv1.MutatingWebhookConfiguration, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// NewConfigurations returns the Configurations client over a lean REST
// client for admissionregistration.k8s.io/v1, a group only the admission
// controller links.
func NewConfigurations(cfg *rest.Config) (Configurations, error) {
	rc, err := kubeclient.RESTClient(cfg, admissionregistrationv1.SchemeGroupVersion, admissionregistrationv1.AddToScheme)
	if err != nil {
		return nil, fmt.Errorf("building the webhook configuration client: %w", err)
	}
	s := runtime.NewScheme()
	if err := admissionregistrationv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return gentype.NewClientWithList("mutatingwebhookconfigurations", rc, runtime.NewParameterCodec(s), "",
		func() *admissionregistrationv1.MutatingWebhookConfiguration {
			return &admissionregistrationv1.MutatingWebhookConfiguration{}
		},
		func() *admissionregistrationv1.MutatingWebhookConfigurationList {
			return &admissionregistrationv1.MutatingWebhookConfigurationList{}
		},
		gentype.PrefersProtobuf[*admissionregistrationv1.MutatingWebhookConfiguration]()), nil
}

// Register creates the configuration or updates it in place when it differs.
// It never deletes it, so there is no window without the webhook.
func Register(ctx context.Context, api Configurations, r Registration) error {
	want := r.Config()
	for attempt := 0; ; attempt++ {
		have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
			if apierrors.IsAlreadyExists(err) && attempt < 3 {
				continue
			}
			if err == nil {
				klog.FromContext(ctx).Info("Created the MutatingWebhookConfiguration", "name", want.Name)
			}
			return wrap(err, "creating", want.Name)
		}
		if err != nil {
			return wrap(err, "reading", want.Name)
		}
		if reflect.DeepEqual(have.Webhooks, want.Webhooks) && labelsContain(have.Labels, want.Labels) {
			return nil
		}
		upd := have.DeepCopy()
		upd.Webhooks = want.Webhooks
		if len(want.Labels) > 0 && upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			upd.Labels[k] = v
		}
		_, err = api.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
		if apierrors.IsConflict(err) && attempt < 3 {
			continue
		}
		if err == nil {
			klog.FromContext(ctx).Info("Updated the MutatingWebhookConfiguration", "name", want.Name)
		}
		return wrap(err, "updating", want.Name)
	}
}

// Unregister deletes the configuration Register maintains, when it still
// calls this admission controller: its vpa.k8s.io webhook calls r's Service
// (or URL). A configuration that calls something else, or that is missing,
// is left as it is. The delete has the UID and resourceVersion read as
// preconditions, so a configuration changed since (a new replica that
// registered again) stays. It reports whether it deleted.
func Unregister(ctx context.Context, api Configurations, r Registration) (bool, error) {
	have, err := api.Get(ctx, r.ConfigName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap(err, "reading", r.ConfigName)
	}
	if !callsUs(have, r) {
		klog.FromContext(ctx).Info("Leaving the MutatingWebhookConfiguration: it calls another webhook", "name", r.ConfigName)
		return false, nil
	}
	err = api.Delete(ctx, r.ConfigName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &have.UID, ResourceVersion: &have.ResourceVersion}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap(err, "deleting", r.ConfigName)
	}
	klog.FromContext(ctx).Info("Deleted the MutatingWebhookConfiguration", "name", r.ConfigName)
	return true, nil
}

// callsUs tells whether the vpa.k8s.io webhook of c calls r's Service or URL.
func callsUs(c *admissionregistrationv1.MutatingWebhookConfiguration, r Registration) bool {
	for _, w := range c.Webhooks {
		if w.Name != WebhookName {
			continue
		}
		cc := w.ClientConfig
		if r.URL != "" {
			return cc.URL != nil && *cc.URL == r.URL
		}
		return cc.Service != nil && cc.Service.Namespace == r.ServiceNamespace && cc.Service.Name == r.ServiceName
	}
	return false
}

// PatchCABundle sets the caBundle of the vpa.k8s.io webhook in the named
// configuration.
func PatchCABundle(ctx context.Context, api Configurations, configName string, ca []byte) error {
	patch, err := json.Marshal(map[string]any{
		"webhooks": []map[string]any{{"name": WebhookName, "clientConfig": map[string]any{"caBundle": ca}}},
	})
	if err != nil {
		return err
	}
	_, err = api.Patch(ctx, configName, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	return wrap(err, "patching the CA bundle of", configName)
}

const fieldManager = "vpa-admission-controller"

func wrap(err error, verb, name string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s MutatingWebhookConfiguration %s: %w", verb, name, err)
}

func labelsContain(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
