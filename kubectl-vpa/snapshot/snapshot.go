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

// Package snapshot reads, in one pass, everything kubectl-vpa explains and
// reports: the VPAs of a namespace (or of all), their checkpoints, pods,
// controllers, LimitRanges, HorizontalPodAutoscalers and
// PodDisruptionBudgets; and indexes it the way the components do (targets
// resolved by pkg/target, pods matched to VPAs by its Matcher).
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/target"
)

// Snapshot is the state of one namespace ("" for all) at Now.
type Snapshot struct {
	Now         time.Time
	VPAs        []*vpav1.VerticalPodAutoscaler
	Checkpoints []*vpav1.VerticalPodAutoscalerCheckpoint
	Pods        []*corev1.Pod
	LimitRanges []*corev1.LimitRange
	HPAs        []*autoscalingv2.HorizontalPodAutoscaler
	PDBs        []*policyv1.PodDisruptionBudget
	// Workloads are the well-known controllers (Deployments, ReplicaSets,
	// ...), any of the typed objects target.TrimWorkload accepts.
	Workloads []runtime.Object
	// Warnings are reads that failed without making the snapshot useless
	// (a kind the user may not list), for the output.
	Warnings []string

	// Scales reads the scale subresource of kinds that are not well known;
	// nil in tests.
	Scales target.ScaleGetter
}

// Clients are the API clients Load reads with.
type Clients struct {
	kubeclient.Clients
	Autoscaling rest.Interface // autoscaling/v2
	Policy      rest.Interface // policy/v1
	Scales      target.ScaleGetter
}

// NewClients builds Clients from cfg.
func NewClients(cfg *rest.Config) (Clients, error) {
	var c Clients
	var err error
	if c.Clients, err = kubeclient.NewClients(cfg); err != nil {
		return c, err
	}
	if c.Autoscaling, err = kubeclient.RESTClient(cfg, autoscalingv2.SchemeGroupVersion, autoscalingv2.AddToScheme); err != nil {
		return c, err
	}
	if c.Policy, err = kubeclient.RESTClient(cfg, policyv1.SchemeGroupVersion, policyv1.AddToScheme); err != nil {
		return c, err
	}
	if c.Scales, err = target.NewScaleClient(cfg); err != nil {
		return c, err
	}
	return c, nil
}

// Load reads the snapshot of namespace ("" for all namespaces). The VPAs
// and pods must be readable; every other kind that cannot be read is left
// out with a warning.
func Load(ctx context.Context, c Clients, namespace string, now time.Time) (*Snapshot, error) {
	s := &Snapshot{Now: now, Scales: c.Scales}
	vpas, err := c.VPA.VerticalPodAutoscalers(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing VerticalPodAutoscalers: %w", err)
	}
	for i := range vpas.Items {
		s.VPAs = append(s.VPAs, &vpas.Items[i])
	}
	var pods corev1.PodList
	if err := list(ctx, c.Core, "pods", namespace, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		s.Pods = append(s.Pods, &pods.Items[i])
	}
	if cps, err := c.VPA.VerticalPodAutoscalerCheckpoints(namespace).List(ctx, metav1.ListOptions{}); err != nil {
		s.warn("checkpoints", err)
	} else {
		for i := range cps.Items {
			s.Checkpoints = append(s.Checkpoints, &cps.Items[i])
		}
	}
	var lrs corev1.LimitRangeList
	if s.try(list(ctx, c.Core, "limitranges", namespace, &lrs), "limitranges") {
		for i := range lrs.Items {
			s.LimitRanges = append(s.LimitRanges, &lrs.Items[i])
		}
	}
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if s.try(list(ctx, c.Autoscaling, "horizontalpodautoscalers", namespace, &hpas), "horizontalpodautoscalers") {
		for i := range hpas.Items {
			s.HPAs = append(s.HPAs, &hpas.Items[i])
		}
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if s.try(list(ctx, c.Policy, "poddisruptionbudgets", namespace, &pdbs), "poddisruptionbudgets") {
		for i := range pdbs.Items {
			s.PDBs = append(s.PDBs, &pdbs.Items[i])
		}
	}
	for _, k := range []struct {
		client   rest.Interface
		resource string
		list     runtime.Object
	}{
		{c.Apps, "deployments", &appsv1.DeploymentList{}},
		{c.Apps, "replicasets", &appsv1.ReplicaSetList{}},
		{c.Apps, "statefulsets", &appsv1.StatefulSetList{}},
		{c.Apps, "daemonsets", &appsv1.DaemonSetList{}},
		{c.Batch, "jobs", &batchv1.JobList{}},
		{c.Batch, "cronjobs", &batchv1.CronJobList{}},
		{c.Core, "replicationcontrollers", &corev1.ReplicationControllerList{}},
	} {
		if !s.try(list(ctx, k.client, k.resource, namespace, k.list), k.resource) {
			continue
		}
		items, err := meta.ExtractList(k.list)
		if err != nil {
			return nil, err
		}
		s.Workloads = append(s.Workloads, items...)
	}
	return s, nil
}

func list(ctx context.Context, c rest.Interface, resource, namespace string, into runtime.Object) error {
	return c.Get().Namespace(namespace).Resource(resource).Do(ctx).Into(into)
}

func (s *Snapshot) try(err error, what string) bool {
	if err != nil {
		s.warn(what, err)
		return false
	}
	return true
}

func (s *Snapshot) warn(what string, err error) {
	if apierrors.IsForbidden(err) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("cannot list %s (forbidden); the output leaves them out", what))
		return
	}
	s.Warnings = append(s.Warnings, fmt.Sprintf("cannot list %s: %v", what, err))
}

// Index is a Snapshot resolved the way the components resolve it.
type Index struct {
	*Snapshot
	Resolver  *target.Resolver
	Workloads target.IndexerWorkloads
	// Targets are the resolved VPAs; Unresolved the others with why.
	Targets    map[*vpav1.VerticalPodAutoscaler]*target.Target
	Unresolved map[*vpav1.VerticalPodAutoscaler]string
	// Matcher holds every resolved VPA (the recommender's view, which
	// attributes usage by selector); Updating only those in a mode whose
	// running pods the updater updates (the updater's view).
	Matcher, Updating *target.Matcher
	// Controllers are the pods' topmost controllers (nil for none).
	Controllers map[*corev1.Pod]*target.Ref
}

// NewIndex resolves every VPA's target and every pod's controller.
func NewIndex(ctx context.Context, s *Snapshot) (*Index, error) {
	ix := &Index{Snapshot: s, Workloads: target.IndexerWorkloads{}, Targets: map[*vpav1.VerticalPodAutoscaler]*target.Target{},
		Unresolved: map[*vpav1.VerticalPodAutoscaler]string{}, Controllers: map[*corev1.Pod]*target.Ref{}}
	for _, kind := range []string{target.KindDeployment, target.KindReplicaSet, target.KindStatefulSet, target.KindDaemonSet,
		target.KindJob, target.KindCronJob, target.KindReplicationController} {
		ix.Workloads[kind] = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	for _, obj := range s.Workloads {
		w, err := target.TrimWorkload(obj)
		if err != nil {
			return nil, err
		}
		wl, ok := target.WorkloadOf(w)
		if !ok {
			continue
		}
		if err := ix.Workloads[wl.Kind].Add(w); err != nil {
			return nil, err
		}
	}
	ix.Resolver = target.NewResolver(ix.Workloads, s.Scales, target.Options{})
	var all, updating []*target.Target
	for _, v := range s.VPAs {
		t, err := ix.Resolver.Resolve(ctx, v)
		if err != nil {
			var ce *target.ConfigError
			if errors.As(err, &ce) {
				ix.Unresolved[v] = ce.Message
			} else {
				ix.Unresolved[v] = err.Error()
			}
			continue
		}
		ix.Targets[v] = t
		all = append(all, t)
		if vpav1.GetUpdateMode(v).UpdatesRunningPods() {
			updating = append(updating, t)
		}
	}
	ix.Matcher, ix.Updating = target.NewMatcher(all), target.NewMatcher(updating)
	for _, p := range s.Pods {
		ref, err := ix.Resolver.PodController(ctx, p)
		if err == nil {
			ix.Controllers[p] = ref
		}
	}
	return ix, nil
}

// Find returns the VPA namespace/name, nil when there is none.
func (s *Snapshot) Find(namespace, name string) *vpav1.VerticalPodAutoscaler {
	for _, v := range s.VPAs {
		if v.Namespace == namespace && v.Name == name {
			return v
		}
	}
	return nil
}

// PodsOf returns the live pods whose labels the VPA's selector matches,
// sorted by name: the pods the recommender takes usage from. Pending pods
// are included (the admission controller patched them).
func (ix *Index) PodsOf(v *vpav1.VerticalPodAutoscaler) []*corev1.Pod {
	t := ix.Targets[v]
	if t == nil {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range ix.Pods {
		if p.Namespace != v.Namespace || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if t.Selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// UpdaterPods returns the pods the updater would process for the VPA: those
// it controls by the updater's rule (Matcher.ControllingVPA among VPAs in an
// updating mode), sorted by name.
func (ix *Index) UpdaterPods(v *vpav1.VerticalPodAutoscaler) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range ix.Pods {
		if p.Namespace != v.Namespace || p.DeletionTimestamp != nil {
			continue
		}
		if t := ix.Updating.ControllingVPA(p, ix.Controllers[p]); t != nil && t.VPA == v {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LimitRangesIn returns a namespace's LimitRanges, merged.
func (s *Snapshot) LimitRangesIn(namespace string) limitrange.Merged {
	var items []*corev1.LimitRange
	for _, lr := range s.LimitRanges {
		if lr.Namespace == namespace {
			items = append(items, lr)
		}
	}
	return limitrange.Merge(items)
}

// HPAsIn returns a namespace's HPAs.
func (s *Snapshot) HPAsIn(namespace string) []*autoscalingv2.HorizontalPodAutoscaler {
	var out []*autoscalingv2.HorizontalPodAutoscaler
	for _, h := range s.HPAs {
		if h.Namespace == namespace {
			out = append(out, h)
		}
	}
	return out
}

// CheckpointsOf returns the VPA's checkpoints by container name.
func (s *Snapshot) CheckpointsOf(v *vpav1.VerticalPodAutoscaler) map[string]*vpav1.VerticalPodAutoscalerCheckpoint {
	out := map[string]*vpav1.VerticalPodAutoscalerCheckpoint{}
	for _, cp := range s.Checkpoints {
		if cp.Namespace == v.Namespace && cp.Spec.VPAObjectName == v.Name {
			out[cp.Spec.ContainerName] = cp
		}
	}
	return out
}

// Overlaps returns, for the VPA, the other VPAs whose selectors match some of
// its pods and the VPAs the admission controller applies to those pods
// (target.AdmissionChoiceAmong; "" for none), both sorted.
func (ix *Index) Overlaps(v *vpav1.VerticalPodAutoscaler) (others, chosen []string) {
	o, c := map[string]bool{}, map[string]bool{}
	for _, p := range ix.PodsOf(v) {
		sel := ix.Matcher.Selecting(p.Namespace, p.Labels)
		if len(sel) < 2 {
			continue
		}
		for _, t := range sel {
			if t.VPA != v {
				o[t.VPA.Name] = true
			}
		}
		name := ""
		if t := target.AdmissionChoiceAmong(sel, ix.Controllers[p]); t != nil {
			name = t.VPA.Name
		}
		c[name] = true
	}
	return sortedKeys(o), sortedKeys(c)
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
