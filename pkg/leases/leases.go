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

// Package leases is OpenVPA's one lease core for coordination.k8s.io/v1
// Leases; leader election (pkg/leaderelection), the recommender's shard
// Leases (pkg/shards) and the admission controller's status Lease
// (pkg/status) are built on it. It holds:
//
//   - Client, a lean client that speaks protobuf through kubeclient's REST
//     client and links none of client-go's other API groups;
//   - NextSpec and ReleasedSpec, the one place a Lease spec is built (the
//     holder, the duration as whole seconds clamped to int32, the acquire
//     and renew times, the transitions);
//   - Observer, which tells whether a Lease is held and by whom, by the
//     observer's injected clock;
//   - Holder, which creates, renews or takes over (optimistic updates: a
//     stale resourceVersion is a Conflict) and releases Leases as one
//     holder identity.
package leases

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// Client reads and writes coordination.k8s.io/v1 Leases.
type Client interface {
	Get(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// New returns a Client over kubeclient's lean REST client
// for coordination.k8s.io/v1 built from a copy of cfg: protobuf, and a scheme
// that links none of the API groups the components do not read. Errors from
// the API server are apierrors (IsNotFound, IsConflict, IsAlreadyExists work).
func New(cfg *rest.Config) (Client, error) {
	if cfg == nil {
		return nil, errors.New("building the lease client: no REST config")
	}
	rc, err := kubeclient.RESTClient(cfg, coordinationv1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("building the lease client: %w", err)
	}
	return &leaseClient{rest: rc}, nil
}

// ListClient is a Client that also lists Leases by label, for pkg/shards.
type ListClient interface {
	Client
	List(ctx context.Context, namespace, labelSelector string) (*coordinationv1.LeaseList, error)
}

// NewListClient is New, with List.
func NewListClient(cfg *rest.Config) (ListClient, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return c.(*leaseClient), nil
}

type leaseClient struct {
	rest *rest.RESTClient
}

const leasesResource = "leases"

func (c *leaseClient) Get(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.rest.Get().Namespace(namespace).Resource(leasesResource).Name(name).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *leaseClient) Create(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if lease == nil {
		return nil, errors.New("creating a lease: nil lease")
	}
	out := &coordinationv1.Lease{}
	err := c.rest.Post().Namespace(lease.Namespace).Resource(leasesResource).Body(lease).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *leaseClient) Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if lease == nil {
		return nil, errors.New("updating a lease: nil lease")
	}
	out := &coordinationv1.Lease{}
	err := c.rest.Put().Namespace(lease.Namespace).Resource(leasesResource).Name(lease.Name).Body(lease).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *leaseClient) List(ctx context.Context, namespace, labelSelector string) (*coordinationv1.LeaseList, error) {
	out := &coordinationv1.LeaseList{}
	err := c.rest.Get().Namespace(namespace).Resource(leasesResource).Param("labelSelector", labelSelector).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}
