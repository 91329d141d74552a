package input

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
)

func podMetrics(ns, name, cpu, mem string) *metricsv1beta1.PodMetrics {
	return &metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Timestamp:  metav1.NewTime(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)),
		Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}},
	}
}

func TestMetricsServerReadsAllOrTheNamespacesGiven(t *testing.T) {
	objs := []runtime.Object{podMetrics("a", "p1", "100m", "10Mi"), podMetrics("b", "p2", "200m", "20Mi"), podMetrics("c", "p3", "300m", "30Mi")}
	pods := func(us []ContainerUsage) []string {
		var out []string
		for _, u := range us {
			out = append(out, u.Pod.String()+"/"+u.Container)
		}
		slices.Sort(out)
		return out
	}
	for name, tc := range map[string]struct {
		namespaces func() []string
		want       []string
	}{
		"one list of every namespace":  {want: []string{"a/p1/app", "b/p2/app", "c/p3/app"}},
		"the namespaces of the caches": {namespaces: func() []string { return []string{"a", "c"} }, want: []string{"a/p1/app", "c/p3/app"}},
		"no namespace cached":          {namespaces: func() []string { return nil }},
	} {
		t.Run(name, func(t *testing.T) {
			client := metricsfake.NewSimpleClientset()
			for _, o := range objs {
				pm := o.(*metricsv1beta1.PodMetrics)
				if err := client.Tracker().Create(metricsv1beta1.SchemeGroupVersion.WithResource("pods"), pm, pm.Namespace); err != nil {
					t.Fatal(err)
				}
			}
			m := NewMetricsServer(client.MetricsV1beta1(), "")
			m.Namespaces = tc.namespaces
			us, err := m.Usage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := pods(us); !slices.Equal(got, tc.want) {
				t.Fatalf("samples of %v, want %v", got, tc.want)
			}
			for _, u := range us {
				if u.Pod.Namespace == "c" && (u.CPU != 300 || u.Memory != 30<<20) {
					t.Errorf("c/p3: CPU %d m, memory %d B; want 300 m, 30 MiB", u.CPU, u.Memory)
				}
			}
		})
	}
}
