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
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/admission-controller/pod"
	"github.com/openvpa/openvpa/admission-controller/vpa"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/features"
	caches "github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/target"
)

// BenchmarkWebhookThroughput is the end-to-end measure of the admission
// path: the real Server, pod Handler and Finder (VPA, Deployment and
// ReplicaSet in informer caches, selectors cached as the binary caches them)
// behind NewHTTPServer and crypto/tls on loopback, posting the
// AdmissionReview the API server sends for a Deployment's new pod (three
// containers, labels, annotations, defaulted fields) from 1 and 4 clients,
// each on its own keep-alive connection. Every review is patched. It reports
// reviews per second and p50/p99 latency; compare two builds with benchstat.
func BenchmarkWebhookThroughput(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	handler := throughputServer(ctx, b)
	body := deploymentPodReview(b)
	checkPatched(b, handler, body)
	b.Logf("review of %d bytes", len(body))
	lb := serveLoopback(b, handler)
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { lb.post(b, clients, body) })
	}
}

// throughputServer is the Server the binary builds (see app.go), over
// caches holding a Deployment "web" in namespace "shop", its ReplicaSet and
// a VPA in mode Initial with a recommendation for its three containers.
func throughputServer(ctx context.Context, b *testing.B) *Server {
	client := fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d4b9c8f6", Namespace: "shop",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: ptrTo(true)}}}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	byKind := map[string]caches.Informer{
		target.KindDeployment: factory.Apps().V1().Deployments().Informer(),
		target.KindReplicaSet: factory.Apps().V1().ReplicaSets().Informer(),
	}
	workloads := target.IndexerWorkloads{}
	for kind, inf := range byKind {
		workloads[kind] = inf.GetIndexer()
	}
	vpas := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{pod.TargetRefIndex: pod.TargetRefIndexFunc})
	finder := pod.NewFinder(vpas, target.NewResolver(workloads, nil, target.Options{}), nil)
	if err := finder.CacheSelectorsOf(byKind); err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	mode := vpav1.UpdateModeInitial
	rec := func(name, cpu, memory string) vpav1.RecommendedContainerResources {
		return vpav1.RecommendedContainerResources{ContainerName: name,
			Target:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
			LowerBound: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			UpperBound: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}
	}
	if err := vpas.Add(&vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode}},
		Status: vpav1.VerticalPodAutoscalerStatus{Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
			rec("app", "350m", "420Mi"), rec("proxy", "60m", "96Mi"), rec("log-shipper", "25m", "64Mi"),
		}}}}); err != nil {
		b.Fatal(err)
	}
	return NewServer(pod.NewHandler(finder, noLimits{}), vpa.NewValidator(features.NewGate()), NewMetrics(nil), nil)
}

func ptrTo[T any](v T) *T { return &v }

// deploymentPodReview is the AdmissionReview of a CREATE of a pod of the
// Deployment "web", with the fields the API server has defaulted by the time
// it calls a mutating webhook.
func deploymentPodReview(b *testing.B) []byte {
	container := func(name, image string, port int32, cpu, memory string) corev1.Container {
		return corev1.Container{
			Name: name, Image: image,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			TerminationMessagePath:   corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
			SecurityContext:          &corev1.SecurityContext{AllowPrivilegeEscalation: ptrTo(false), RunAsNonRoot: ptrTo(true)},
		}
	}
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "web-7d4b9c8f6-", Namespace: "shop",
			Labels:      map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6", "app.kubernetes.io/part-of": "shop", "team": "checkout"},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2025-01-14T09:12:44Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6",
				UID: "4b1f0c3e-2a8d-4e7b-9c61-0d5e3f8a9b72", Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				container("app", "registry.example.com/shop/web:1.42.0", 8080, "250m", "256Mi"),
				container("proxy", "registry.example.com/mesh/proxy:1.23.1", 15001, "100m", "128Mi"),
				container("log-shipper", "registry.example.com/obs/shipper:3.4.2", 2020, "20m", "64Mi"),
			},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptrTo[int64](3607), Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}, DefaultMode: ptrTo[int32](420)}}}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptrTo[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "web",
			SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptrTo[int64](2000)},
			SchedulerName:                 corev1.DefaultSchedulerName,
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](300)},
			},
			Priority:           ptrTo[int32](0),
			EnableServiceLinks: ptrTo(true),
			PreemptionPolicy:   ptrTo(corev1.PreemptLowerPriority),
		},
	}
	raw, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	podKind := metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	podResource := metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "705ab4f5-6393-11e8-b7cc-42010a800002", Kind: podKind, Resource: podResource, RequestKind: &podKind, RequestResource: &podResource,
			Namespace: "shop", Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller", UID: "b2c7e1d0-5f3a-4c8e-9a1b-7d6e5f4c3b2a",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}},
			Object:  runtime.RawExtension{Raw: raw},
			DryRun:  ptrTo(false),
			Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// checkPatched fails b unless the review of body is answered with a patch
// setting the three containers' requests.
func checkPatched(b *testing.B, s *Server, body []byte) {
	req := httptest.NewRequest("POST", "/", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.Response == nil {
		b.Fatalf("status %d, not a review: %v", rec.Code, err)
	}
	patch := string(r.Response.Patch)
	for _, want := range []string{"/spec/containers/0/resources/requests/cpu", "/spec/containers/2/resources/requests/memory"} {
		if !strings.Contains(patch, want) {
			b.Fatalf("patch %s does not set %s", patch, want)
		}
	}
}
