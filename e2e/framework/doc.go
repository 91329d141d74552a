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

// Package framework runs end-to-end tests against the local control plane from hack/cluster:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler on loopback, KWOK nodes that
// behave like kubelets, and metrics-server serving the usage that pods declare in annotations.
//
// A test starts with Start, which brings the cluster up if it is not running (building the
// binaries on a fresh machine) and fails the test, saying why, if it cannot:
//
//	func TestSomething(t *testing.T) {
//		c := framework.Start(t)
//		ns := c.NewNamespace(t)
//		c.CreateDeployment(t, ns, framework.Workload{
//			Name:     "web",
//			Replicas: 3,
//			Usage:    framework.Usage{CPU: "250m", Memory: "100Mi"},
//		})
//		c.WaitForPods(t, ns, "app=web", 3, framework.PodReady)
//	}
//
// On a fresh machine the first start builds the control plane (several minutes); run
// `make cluster-up` or `make test` first so that does not count against go test's timeout.
//
// Every test gets its own namespace, so tests and packages share one cluster and can run in
// parallel. Waits poll with deadlines (WaitFor); nothing sleeps to synchronise. RunComponent
// starts an OpenVPA component as a process that acts as a ServiceAccount, so it runs with the
// RBAC from deploy/.
//
// The cluster's kubelet emulation is steered by pod annotations (see hack/cluster/README.md):
// AnnotationUsageCPU and AnnotationUsageMemory set simulated usage (memory above a container's
// limit OOM-kills it), AnnotationReadyDelay delays readiness, and AnnotationResize makes the
// next in-place resize Infeasible or Deferred instead of actuating it.
package framework
