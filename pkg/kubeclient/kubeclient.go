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

// Package kubeclient builds the REST configuration every component uses to
// talk to the API server, from the flags upstream VPA shares across its binaries.
package kubeclient

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options are the API client settings of a component.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file; empty means in-cluster.
	Kubeconfig string
	// QPS and Burst bound the client's request rate.
	QPS   float32
	Burst int
	// UserAgent names the component in API server logs and audit events.
	UserAgent string
}

// NewOptions returns the upstream defaults: QPS 50, burst 100.
func NewOptions(userAgent string) Options {
	return Options{QPS: 50, Burst: 100, UserAgent: userAgent}
}

// AddFlags registers --kubeconfig, --kube-api-qps and --kube-api-burst.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Only required if out-of-cluster.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "QPS limit when making requests to Kubernetes apiserver")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "QPS burst limit when making requests to Kubernetes apiserver")
}

// Validate checks the options.
func (o *Options) Validate() error {
	if o.QPS <= 0 {
		return fmt.Errorf("--kube-api-qps must be positive, got %v", o.QPS)
	}
	if o.Burst <= 0 {
		return fmt.Errorf("--kube-api-burst must be positive, got %d", o.Burst)
	}
	return nil
}

// RESTConfig loads the kubeconfig (or the in-cluster configuration) and
// applies the rate limits and user agent.
func (o *Options) RESTConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading the API client configuration: %w", err)
	}
	cfg.QPS = o.QPS
	cfg.Burst = o.Burst
	if o.UserAgent != "" {
		cfg.UserAgent = o.UserAgent
	}
	return cfg, nil
}

// Protobuf returns a copy of cfg that talks protobuf, for clients of the
// built-in API types (not custom resources, which only speak JSON). Lists and
// watches of pods and controllers decode several times faster and leave far
// less garbage than with JSON.
func Protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}
