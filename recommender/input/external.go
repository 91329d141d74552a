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

package input

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	externalv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"

	"github.com/openvpa/openvpa/recommender/model"
)

// ExternalMetricsGroupVersion is the API --use-external-metrics reads.
var ExternalMetricsGroupVersion = externalv1beta1.SchemeGroupVersion

// PodQuery is one pod whose usage the external metrics source asks for:
// the pod and the selector of the VPA it is under.
type PodQuery struct {
	Pod      types.NamespacedName
	Selector labels.Selector
}

// ExternalOptions configure ExternalMetrics, from the recommender flags.
type ExternalOptions struct {
	// Metrics names the external metric of each resource
	// (--external-metrics-cpu-metric, --external-metrics-memory-metric);
	// a resource without a name is not read.
	Metrics map[corev1.ResourceName]string
	// ContainerNameLabel is the metric label holding the container's name
	// (--container-name-label, "name").
	ContainerNameLabel string
}

// ExternalMetrics reads usage from the external metrics API
// (external.metrics.k8s.io/v1beta1) instead of metrics-server, with
// upstream's conventions: for each pod under a VPA and each resource, it
// lists the resource's metric in the pod's namespace with the VPA's selector
// and pod=<pod name> as the label selector, and reads each series as the
// usage of the container its ContainerNameLabel label names (series without
// it are skipped). A series' value is in cores for CPU and bytes for memory,
// as a Quantity; as upstream, the first series of the last metric read gives
// the time of the pod's samples.
type ExternalMetrics struct {
	client rest.Interface
	opts   ExternalOptions
	// Pods returns the pods to read usage for; the recommender loop's
	// MetricsQueries. It is called from Usage.
	Pods func() []PodQuery
}

// NewExternalMetrics returns the external metrics source over cfg.
func NewExternalMetrics(cfg *rest.Config, opts ExternalOptions) (*ExternalMetrics, error) {
	if len(opts.Metrics) == 0 {
		return nil, errors.New("no external metric is named for cpu or memory")
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.APIPath = "/"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the external metrics client: %w", err)
	}
	return &ExternalMetrics{client: rc, opts: opts}, nil
}

// Check fails when the API server does not serve the external metrics API,
// with an error that says so.
func (e *ExternalMetrics) Check(ctx context.Context) error {
	gv := ExternalMetricsGroupVersion
	var l metav1.APIResourceList
	if err := e.get(ctx, path.Join("/apis", gv.Group, gv.Version), nil, &l); err != nil {
		return fmt.Errorf("--use-external-metrics: the API server does not serve the external metrics API %s (register an adapter's APIService v1beta1.%s): %w",
			gv, gv.Group, err)
	}
	return nil
}

// externalRequestTimeout bounds one request to the external metrics API, so
// that a slow adapter cannot hold the recommender's loop.
const externalRequestTimeout = 10 * time.Second

func (e *ExternalMetrics) get(ctx context.Context, absPath string, params map[string]string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, externalRequestTimeout)
	defer cancel()
	req := e.client.Get().AbsPath(absPath).SetHeader("Accept", runtime.ContentTypeJSON)
	for k, v := range params {
		req = req.Param(k, v)
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decoding %s: %w", absPath, err)
	}
	return nil
}

// Usage implements MetricsSource. It reads the pods of e.Pods, which are
// the ones the caller tracks, so keep is not consulted. A pod whose metrics
// cannot be read is skipped and the others read; the errors are returned
// together.
func (e *ExternalMetrics) Usage(ctx context.Context, _ func(types.NamespacedName) bool) ([]ContainerUsage, error) {
	if e.Pods == nil {
		return nil, nil
	}
	var out []ContainerUsage
	var errs []error
	for _, q := range e.Pods() {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		u, err := e.podUsage(ctx, q)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, u...)
	}
	return out, errors.Join(errs...)
}

// podUsage reads the usage of one pod's containers.
func (e *ExternalMetrics) podUsage(ctx context.Context, q PodQuery) ([]ContainerUsage, error) {
	byPod, err := labels.NewRequirement("pod", selection.Equals, []string{q.Pod.Name})
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", q.Pod, err)
	}
	sel := labels.Everything()
	if q.Selector != nil {
		sel = q.Selector
	}
	sel = sel.Add(*byPod)
	byName := map[string]*ContainerUsage{}
	var order []string
	var at metav1.Time
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		metric, ok := e.opts.Metrics[res]
		if !ok || metric == "" {
			continue
		}
		gv := ExternalMetricsGroupVersion
		var l externalv1beta1.ExternalMetricValueList
		p := path.Join("/apis", gv.Group, gv.Version, "namespaces", q.Pod.Namespace, metric)
		if err := e.get(ctx, p, map[string]string{"labelSelector": sel.String()}, &l); err != nil {
			return nil, fmt.Errorf("reading external metric %s of pod %s: %w", metric, q.Pod, err)
		}
		if len(l.Items) > 0 {
			at = l.Items[0].Timestamp
		}
		for i := range l.Items {
			item := &l.Items[i]
			name, ok := item.MetricLabels[e.opts.ContainerNameLabel]
			if !ok || name == "" {
				continue
			}
			u := byName[name]
			if u == nil {
				u = &ContainerUsage{Pod: q.Pod, Container: name, CPU: -1, Memory: -1}
				byName[name] = u
				order = append(order, name)
			}
			if res == corev1.ResourceCPU {
				u.CPU = model.ResourceAmount(item.Value.MilliValue())
			} else {
				u.Memory = model.ResourceAmount(item.Value.Value())
			}
		}
	}
	out := make([]ContainerUsage, 0, len(order))
	for _, n := range order {
		u := *byName[n]
		u.Time = at.Time
		out = append(out, u)
	}
	return out, nil
}
