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

package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// DryRunPod creates, as a server-side dry run, a pod of the Deployment's
// current ReplicaSet (app=<deployment>) and returns it as the admission chain
// would store it: what a new pod of the Deployment gets from mutating
// webhooks, without scheduling anything.
func (c *Cluster) DryRunPod(ns, deployment string) (*corev1.Pod, error) {
	return DryRunPodWith(context.Background(), c.Client, ns, deployment)
}

// DryRunPodWith is DryRunPod through the given client (one with its own
// warning handler, say).
func DryRunPodWith(ctx context.Context, client kubernetes.Interface, ns, deployment string) (*corev1.Pod, error) {
	p, err := NewPodOf(ctx, client, ns, deployment)
	if err != nil {
		return nil, err
	}
	return client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// NewPodOf returns a new pod of the Deployment's ReplicaSet (app=<deployment>) as the
// ReplicaSet controller would create it, not yet created.
func NewPodOf(ctx context.Context, client kubernetes.Interface, ns, deployment string) (*corev1.Pod, error) {
	rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + deployment})
	if err != nil || len(rss.Items) == 0 {
		return nil, fmt.Errorf("no ReplicaSet of %s yet: %v", deployment, err)
	}
	rs := rss.Items[0]
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: deployment + "-probe-", Namespace: ns, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}},
		},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}, nil
}
