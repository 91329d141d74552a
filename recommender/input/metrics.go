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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"

	"github.com/openvpa/openvpa/recommender/model"
)

// ContainerUsage is one usage sample of one container.
type ContainerUsage struct {
	Pod       types.NamespacedName
	Container string
	// Time is when the measurement window started (PodMetrics.Timestamp).
	Time time.Time
	// CPU in millicores, Memory in bytes (working set).
	CPU    model.ResourceAmount
	Memory model.ResourceAmount
}

// MetricsSource returns the current usage of the containers it knows.
type MetricsSource interface {
	// Usage returns one sample per container of each pod that keep (nil:
	// every pod) accepts. A source may return other pods' samples too.
	Usage(ctx context.Context, keep func(types.NamespacedName) bool) ([]ContainerUsage, error)
}

// MetricsServer reads PodMetrics from the metrics.k8s.io API.
type MetricsServer struct {
	client    metricsclient.MetricsV1beta1Interface
	namespace string
}

// NewMetricsServer returns a source listing PodMetrics in namespace ("" for
// all namespaces).
func NewMetricsServer(client metricsclient.MetricsV1beta1Interface, namespace string) *MetricsServer {
	return &MetricsServer{client: client, namespace: namespace}
}

// podMetrics is what Usage reads of a PodMetrics.
type podMetrics struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
	Timestamp  metav1.Time `json:"timestamp"`
	Containers []struct {
		Name  string `json:"name"`
		Usage struct {
			CPU    *resource.Quantity `json:"cpu"`
			Memory *resource.Quantity `json:"memory"`
		} `json:"usage"`
	} `json:"containers"`
}

// Usage lists PodMetrics and returns one sample per container of the pods
// keep accepts. The list is decoded from the response stream one item at a
// time, so that neither the response nor the decoded list of every pod in
// the cluster is held at once: a replica serving some namespaces holds only
// their samples. Init containers are not in PodMetrics' container list by
// name alone, so the caller drops them using the pod spec.
func (m *MetricsServer) Usage(ctx context.Context, keep func(types.NamespacedName) bool) ([]ContainerUsage, error) {
	body, err := m.client.RESTClient().Get().Namespace(m.namespace).Resource("pods").
		SetHeader("Accept", runtime.ContentTypeJSON).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing pod metrics: %w", err)
	}
	defer func() { _ = body.Close() }()
	out, err := decodePodMetricsList(bufio.NewReader(body), keep)
	if err != nil {
		return nil, fmt.Errorf("decoding the pod metrics list: %w", err)
	}
	return out, nil
}

// decodePodMetricsList decodes a PodMetricsList in JSON item by item.
func decodePodMetricsList(r io.Reader, keep func(types.NamespacedName) bool) ([]ContainerUsage, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var out []ContainerUsage
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if key != "items" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if tok == nil { // "items": null
			continue
		}
		if tok != json.Delim('[') {
			return nil, fmt.Errorf("items: want an array, got %v", tok)
		}
		for i := 0; dec.More(); i++ {
			var pm podMetrics
			if err := dec.Decode(&pm); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			pod := types.NamespacedName{Namespace: pm.Metadata.Namespace, Name: pm.Metadata.Name}
			if keep != nil && !keep(pod) {
				continue
			}
			for _, c := range pm.Containers {
				u := ContainerUsage{Pod: pod, Container: c.Name, Time: pm.Timestamp.Time, CPU: -1, Memory: -1}
				if q := c.Usage.CPU; q != nil {
					u.CPU = model.ResourceAmount(q.MilliValue())
				}
				if q := c.Usage.Memory; q != nil {
					u.Memory = model.ResourceAmount(q.Value())
				}
				out = append(out, u)
			}
		}
		if err := expectDelim(dec, ']'); err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	return out, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("want %v, got %v", want, tok)
	}
	return nil
}
