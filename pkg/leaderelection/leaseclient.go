package leaderelection

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// LeaseClient reads and writes coordination.k8s.io/v1 Leases.
type LeaseClient interface {
	Get(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// NewLeaseClient returns a LeaseClient over a REST client for
// coordination.k8s.io/v1 built from a copy of cfg. It speaks protobuf and its
// scheme knows only Leases and the meta types, so it links none of the other
// API groups. Errors from the API server are apierrors (IsNotFound,
// IsConflict, IsAlreadyExists work).
func NewLeaseClient(cfg *rest.Config) (LeaseClient, error) {
	if cfg == nil {
		return nil, errors.New("building the lease client: no REST config")
	}
	scheme := runtime.NewScheme()
	// Registers Lease and LeaseList, the meta options types and the
	// unversioned Status that error responses decode into.
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the lease client's scheme: %w", err)
	}
	c := kubeclient.Protobuf(cfg)
	c.GroupVersion = &coordinationv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the lease client: %w", err)
	}
	return &leaseClient{rest: rc}, nil
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
