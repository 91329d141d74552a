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

// Package options holds the admission controller's flags, with upstream VPA's
// names and defaults, and their validation.
package options

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"

	"github.com/openvpa/openvpa/admission-controller/webhook"
	"github.com/openvpa/openvpa/pkg/component"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/status"
)

// Options are the admission controller's settings.
type Options struct {
	ClientCAFile string
	// TLSClientCAFile, when set, makes the webhook require client
	// certificates signed by its CAs (unlike ClientCAFile, upstream's CA
	// bundle registered with the webhook).
	TLSClientCAFile string
	TLSCertFile     string
	TLSPrivateKey   string
	ReloadCert      bool
	TLSCiphers      string
	MinTLSVersion   string
	Port            int
	Address         string
	Profiling       bool
	WebhookService  string

	// ReadTimeout, WriteTimeout and IdleTimeout bound what one client can
	// hold of the webhook server (webhook.HTTPOptions).
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration

	RegisterWebhook          bool
	RegisterByURL            bool
	WebhookAddress           string
	WebhookPort              string
	WebhookTimeoutSeconds    int
	WebhookFailurePolicyFail bool
	WebhookLabels            string
	WebhookConfigName        string

	MaxAllowedCPUBoost string

	// NodeFit caps what pods get to the largest node they may use.
	NodeFit bool
	// QuotaFit caps the increase of what pods get to what the namespace's
	// ResourceQuotas leave.
	QuotaFit bool
	// YieldToHPA leaves a resource an HPA scales on by its utilization to
	// the HPA.
	YieldToHPA bool
	// ShutdownDrainTimeout bounds how long the webhook serves on after
	// SIGTERM, waiting to leave its Service's endpoints; zero disables it.
	ShutdownDrainTimeout time.Duration

	StatusLeaseName           string
	StatusLeaseNamespace      string
	StatusLeaseUpdateInterval time.Duration

	// SelfSignedCertDir, when set, makes the admission controller generate a
	// CA and serving certificate into this directory at start and serve
	// them (the TLS and CA file flags then point into it).
	SelfSignedCertDir   string
	SelfSignedCertHosts string

	Kube       kubeclient.Options
	Namespaces namespaces.Options
	Gates      featuregate.MutableFeatureGate
	Logging    *component.Logging

	// Namespace is the admission controller's own namespace ($NAMESPACE, or kube-system).
	Namespace string
}

// DefaultShutdownDrainTimeout is --shutdown-drain-timeout's default: with
// the webhook server's own drain (5s), within a pod's default termination
// grace period (30s).
const DefaultShutdownDrainTimeout = 20 * time.Second

// NewOptions returns upstream's defaults.
func NewOptions() *Options {
	ns := os.Getenv("NAMESPACE")
	if ns == "" {
		ns = "kube-system"
	}
	return &Options{
		ClientCAFile:              "/etc/tls-certs/caCert.pem",
		TLSCertFile:               "/etc/tls-certs/serverCert.pem",
		TLSPrivateKey:             "/etc/tls-certs/serverKey.pem",
		MinTLSVersion:             "tls1_2",
		Port:                      8000,
		Address:                   ":8944",
		WebhookService:            "vpa-webhook",
		ReadTimeout:               webhook.DefaultReadTimeout,
		WriteTimeout:              webhook.DefaultWriteTimeout,
		IdleTimeout:               webhook.DefaultIdleTimeout,
		RegisterWebhook:           true,
		WebhookTimeoutSeconds:     30,
		WebhookConfigName:         "vpa-webhook-config",
		ShutdownDrainTimeout:      DefaultShutdownDrainTimeout,
		StatusLeaseName:           status.DefaultLeaseName,
		StatusLeaseUpdateInterval: status.DefaultInterval,
		Kube:                      kubeclient.NewOptions("vpa-admission-controller"),
		Gates:                     features.NewGate(),
		Logging:                   component.NewLogging(),
		Namespace:                 ns,
		NodeFit:                   true,
		QuotaFit:                  true,
		YieldToHPA:                true,
	}
}

// AddFlags registers every flag on fs, klog's included.
func (o *Options) AddFlags(fs *pflag.FlagSet) { o.FlagSections().AddTo(fs) }

// FlagSections registers every flag, in the sections --help shows.
func (o *Options) FlagSections() *component.Sections {
	s := &component.Sections{}
	fs := s.FlagSet("admission controller")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "Path to CA PEM file.")
	fs.StringVar(&o.TLSClientCAFile, "tls-client-ca-file", o.TLSClientCAFile, "Path to a PEM file of CAs: when set, the webhook accepts only clients with a certificate signed by one of them (the API server, given a client certificate in its AdmissionConfiguration). Empty: no client authentication.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Path to server certificate PEM file.")
	fs.StringVar(&o.TLSPrivateKey, "tls-private-key", o.TLSPrivateKey, "Path to server certificate key PEM file.")
	fs.BoolVar(&o.ReloadCert, "reload-cert", o.ReloadCert, "If set to true, reload leaf and CA certificates when changed.")
	fs.StringVar(&o.TLSCiphers, "tls-ciphers", o.TLSCiphers, "A comma-separated or colon-separated list of ciphers to accept. Only works when min-tls-version is set to tls1_2.")
	fs.StringVar(&o.MinTLSVersion, "min-tls-version", o.MinTLSVersion, "The minimum TLS version to accept. Must be set to either tls1_2 (default) or tls1_3.")
	fs.IntVar(&o.Port, "port", o.Port, "The port to listen on.")
	fs.StringVar(&o.Address, "address", o.Address, "The address to expose Prometheus metrics.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Is debug/pprof endpoint enabled")
	fs.DurationVar(&o.ReadTimeout, "read-timeout", o.ReadTimeout, "Maximum time the webhook server waits for one request, headers and body (and for a TLS handshake).")
	fs.DurationVar(&o.WriteTimeout, "write-timeout", o.WriteTimeout, "Maximum time from the end of a request's headers to the end of its response.")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", o.IdleTimeout, "Maximum time a keep-alive connection to the webhook server waits for its next request.")
	fs.StringVar(&o.WebhookService, "webhook-service", o.WebhookService, "Kubernetes service under which webhook is registered. Used when registerByURL is set to false.")
	fs.BoolVar(&o.RegisterWebhook, "register-webhook", o.RegisterWebhook, "If set to true, admission webhook object will be created on start up to register with the API server.")
	fs.BoolVar(&o.RegisterByURL, "register-by-url", o.RegisterByURL, "If set to true, admission webhook will be registered by URL (webhookAddress:webhookPort) instead of by service name")
	fs.StringVar(&o.WebhookAddress, "webhook-address", o.WebhookAddress, "Address under which webhook is registered. Used when registerByURL is set to true.")
	fs.StringVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Server Port for Webhook")
	fs.IntVar(&o.WebhookTimeoutSeconds, "webhook-timeout-seconds", o.WebhookTimeoutSeconds, "Timeout in seconds that the API server should wait for this webhook to respond before failing.")
	fs.BoolVar(&o.WebhookFailurePolicyFail, "webhook-failure-policy-fail", o.WebhookFailurePolicyFail, "If set to true, will configure the admission webhook failurePolicy to \"Fail\". Use with caution.")
	fs.StringVar(&o.WebhookLabels, "webhook-labels", o.WebhookLabels, "Comma separated list of labels to add to the webhook object. Format: key1:value1,key2:value2")
	fs.StringVar(&o.WebhookConfigName, "webhook-config-name", o.WebhookConfigName, "Name of the MutatingWebhookConfiguration the admission controller creates or updates.")
	fs.DurationVar(&o.ShutdownDrainTimeout, "shutdown-drain-timeout", o.ShutdownDrainTimeout, "On SIGTERM, how long the admission controller, reporting not ready, keeps serving until its pod is no longer a ready endpoint of --webhook-service (plus a second for the API server to notice) before it stops serving. Keep it below the pod's terminationGracePeriodSeconds minus 5s. 0 stops serving at once.")
	fs.StringVar(&o.MaxAllowedCPUBoost, "max-allowed-cpu-boost", o.MaxAllowedCPUBoost, "Maximum amount of CPU that will be applied for a container with boost.")
	fs.BoolVar(&o.NodeFit, "node-fit", o.NodeFit, "Cap the requests a new pod gets so that it fits the largest node it may be scheduled on (nodeSelector, required node affinity, tolerations; allocatable less the requests of the DaemonSet pods on it and of the pod's other containers). Needs list and watch on nodes and pods; the admission controller is ready once both are cached. false gives upstream's patches")
	fs.BoolVar(&o.YieldToHPA, "yield-to-hpa", o.YieldToHPA, "Leave a resource that a HorizontalPodAutoscaler scales the pod's workload on by its utilization (a Resource or ContainerResource metric with a Utilization target) to the HPA: new pods keep their own requests of it and get the recommendation of the others. Needs list and watch on horizontalpodautoscalers; until they are cached, nothing is left out. false sets every controlled resource, as upstream")
	fs.BoolVar(&o.QuotaFit, "resource-quota-fit", o.QuotaFit, "Cap the increase of the requests (and limits) a new pod gets so that the namespace's ResourceQuotas still admit it, keeping room for as many more pods with their own requests as a rollout of its Deployment adds (maxSurge, at least one); event ResourceQuotaConflict on the VPA. Needs list and watch on resourcequotas; without them nothing is capped")
	fs.StringVar(&o.StatusLeaseName, "status-lease-name", o.StatusLeaseName, "Name of the Lease the admission controller renews to report it is healthy.")
	fs.StringVar(&o.StatusLeaseNamespace, "status-lease-namespace", o.StatusLeaseNamespace, "Namespace of the status Lease; empty means $NAMESPACE, else kube-system.")
	fs.DurationVar(&o.StatusLeaseUpdateInterval, "status-lease-update-interval", o.StatusLeaseUpdateInterval, "How often the status Lease is renewed.")
	fs.StringVar(&o.SelfSignedCertDir, "self-signed-cert-dir", o.SelfSignedCertDir, "For local runs: generate a CA and a serving certificate into this directory at start and use them (overrides --client-ca-file, --tls-cert-file and --tls-private-key).")
	fs.StringVar(&o.SelfSignedCertHosts, "self-signed-cert-hosts", o.SelfSignedCertHosts, "Comma-separated DNS names and IP addresses of the self-signed serving certificate; default: 127.0.0.1, localhost and the webhook Service's DNS name.")
	o.Kube.AddFlags(s.FlagSet("kubernetes client"))
	o.Namespaces.AddFlags(s.FlagSet("namespaces"))
	features.AddFlag(s.FlagSet("feature gates"), o.Gates)
	s.AddLogging(o.Logging)
	return s
}

// Config is what the admission controller runs with: the validated options
// and what they resolve to.
type Config struct {
	Options *Options
	// REST is the API server's client configuration (--kubeconfig, the
	// client's QPS and burst).
	REST *rest.Config
	// WebhookLabels are --webhook-labels, parsed.
	WebhookLabels map[string]string
	// MaxCPUBoost is --max-allowed-cpu-boost, parsed; zero for no cap.
	MaxCPUBoost resource.Quantity
}

// Config resolves the validated options.
func (o *Options) Config() (Config, error) {
	c := Config{Options: o}
	var err error
	if c.WebhookLabels, err = o.Labels(); err != nil {
		return c, err
	}
	if c.MaxCPUBoost, err = o.MaxCPUBoost(); err != nil {
		return c, err
	}
	if c.REST, err = o.Kube.RESTConfig(); err != nil {
		return c, err
	}
	return c, nil
}

// Validate reports every invalid setting.
func (o *Options) Validate() []error {
	var errs []error
	if err := o.Kube.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Namespaces.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.Logging.Validate()...)
	if o.MinTLSVersion != "tls1_2" && o.MinTLSVersion != "tls1_3" {
		errs = append(errs, fmt.Errorf("--min-tls-version must be tls1_2 or tls1_3, got %q", o.MinTLSVersion))
	}
	if o.Port <= 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port must be in 1..65535, got %d", o.Port))
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"read-timeout", o.ReadTimeout}, {"write-timeout", o.WriteTimeout}, {"idle-timeout", o.IdleTimeout}} {
		if d.value <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive, got %v", d.name, d.value))
		}
	}
	if o.WebhookTimeoutSeconds < 1 || o.WebhookTimeoutSeconds > 30 {
		errs = append(errs, fmt.Errorf("--webhook-timeout-seconds must be in 1..30, got %d", o.WebhookTimeoutSeconds))
	}
	if o.RegisterWebhook && o.RegisterByURL && o.WebhookAddress == "" {
		errs = append(errs, fmt.Errorf("--register-by-url needs --webhook-address"))
	}
	if o.WebhookConfigName == "" {
		errs = append(errs, fmt.Errorf("--webhook-config-name must not be empty"))
	}
	if _, err := o.Labels(); err != nil {
		errs = append(errs, err)
	}
	if _, err := o.MaxCPUBoost(); err != nil {
		errs = append(errs, err)
	}
	if o.ShutdownDrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-drain-timeout must not be negative, got %v", o.ShutdownDrainTimeout))
	}
	if o.StatusLeaseUpdateInterval <= 0 {
		errs = append(errs, fmt.Errorf("--status-lease-update-interval must be positive, got %v", o.StatusLeaseUpdateInterval))
	}
	return errs
}

// MaxCPUBoost parses --max-allowed-cpu-boost; zero when unset (no cap).
func (o *Options) MaxCPUBoost() (resource.Quantity, error) {
	if o.MaxAllowedCPUBoost == "" {
		return resource.Quantity{}, nil
	}
	q, err := resource.ParseQuantity(o.MaxAllowedCPUBoost)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("--max-allowed-cpu-boost: %w", err)
	}
	return q, nil
}

// Labels parses --webhook-labels.
func (o *Options) Labels() (map[string]string, error) {
	out := map[string]string{}
	if o.WebhookLabels == "" {
		return out, nil
	}
	for _, kv := range strings.Split(o.WebhookLabels, ",") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--webhook-labels: %q is not key:value", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// LeaseNamespace is the status Lease's namespace.
func (o *Options) LeaseNamespace() string {
	if o.StatusLeaseNamespace != "" {
		return o.StatusLeaseNamespace
	}
	return o.Namespace
}

// TLSOptions are the webhook server's TLS settings.
func (o *Options) TLSOptions() webhook.TLSOptions {
	return webhook.TLSOptions{MinVersion: o.MinTLSVersion, Ciphers: o.TLSCiphers, ClientCAFile: o.TLSClientCAFile}
}

// HTTPOptions are the webhook server's timeouts.
func (o *Options) HTTPOptions() webhook.HTTPOptions {
	return webhook.HTTPOptions{ReadTimeout: o.ReadTimeout, ReadHeaderTimeout: min(o.ReadTimeout, webhook.DefaultReadHeaderTimeout), WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout}
}

// WebhookURL is the URL registered with --register-by-url.
func (o *Options) WebhookURL() string {
	u := o.WebhookAddress
	if !strings.Contains(u, "://") {
		u = "https://" + u
	}
	if o.WebhookPort != "" {
		u += ":" + o.WebhookPort
	}
	return u
}
