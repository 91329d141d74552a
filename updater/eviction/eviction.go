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

// Package eviction evicts pods through the policy/v1 Eviction subresource,
// so the API server enforces PodDisruptionBudgets; a refused eviction (429)
// is returned as ErrRefused for the caller to retry in a later loop.
package eviction

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// Event reasons, as upstream.
const (
	ReasonEvictedByVPA = "EvictedByVPA"
	ReasonEvictedPod   = "EvictedPod"
)

// ErrRefused wraps an eviction the API server refused with 429, usually
// because a PodDisruptionBudget does not allow it now.
var ErrRefused = errors.New("eviction refused")

// API posts evictions (Client in the updater).
type API interface {
	Evict(ctx context.Context, eviction *policyv1.Eviction) error
}

// Client posts policy/v1 Evictions to the pods' eviction subresource
// through a lean core/v1 client whose scheme also knows policy/v1; no other
// component links that group.
type Client struct {
	core rest.Interface
}

// NewClient builds a Client from cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	core, err := kubeclient.RESTClient(cfg, corev1.SchemeGroupVersion, policyv1.AddToScheme)
	if err != nil {
		return nil, fmt.Errorf("building the eviction client: %w", err)
	}
	return &Client{core: core}, nil
}

// Evict implements API. A refusal is an apierrors error: IsTooManyRequests
// when a PodDisruptionBudget does not allow it now.
func (c *Client) Evict(ctx context.Context, eviction *policyv1.Eviction) error {
	return c.core.Post().Namespace(eviction.Namespace).Resource("pods").Name(eviction.Name).
		SubResource("eviction").Body(eviction).Do(ctx).Error()
}

// Evicter evicts pods and records events.
type Evicter struct {
	API      API
	Recorder record.EventRecorder
}

// Evict evicts the pod to apply vpa's recommendation.
func (e Evicter) Evict(ctx context.Context, pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	if err := e.API.Evict(ctx, ev); err != nil {
		if apierrors.IsTooManyRequests(err) {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return err
	}
	e.Recorder.Event(pod, corev1.EventTypeNormal, ReasonEvictedByVPA, "Pod was evicted by VPA Updater to apply resource recommendation.")
	if vpa != nil {
		e.Recorder.Eventf(vpa, corev1.EventTypeNormal, ReasonEvictedPod, "VPA Updater evicted Pod %s to apply resource recommendation.", pod.Name)
	}
	return nil
}
