package input

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// MetricsSource returns the current usage of every container it knows.
type MetricsSource interface {
	Usage(ctx context.Context) ([]ContainerUsage, error)
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

// Usage lists PodMetrics and returns one sample per container. Init
// containers are not in PodMetrics' container list by name alone, so the
// caller drops them using the pod spec.
func (m *MetricsServer) Usage(ctx context.Context) ([]ContainerUsage, error) {
	l, err := m.client.PodMetricses(m.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pod metrics: %w", err)
	}
	out := make([]ContainerUsage, 0, len(l.Items))
	for i := range l.Items {
		pm := &l.Items[i]
		pod := types.NamespacedName{Namespace: pm.Namespace, Name: pm.Name}
		for _, c := range pm.Containers {
			u := ContainerUsage{Pod: pod, Container: c.Name, Time: pm.Timestamp.Time, CPU: -1, Memory: -1}
			if q, ok := c.Usage["cpu"]; ok {
				u.CPU = model.ResourceAmount(q.MilliValue())
			}
			if q, ok := c.Usage["memory"]; ok {
				u.Memory = model.ResourceAmount(q.Value())
			}
			out = append(out, u)
		}
	}
	return out, nil
}
