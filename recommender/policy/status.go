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

package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
)

// maxConflicts bounds status.conflictingWorkloads.
const maxConflicts = 10

// Summary is a policy's status over every namespace's last plan.
type Summary struct {
	Counts
	// Observed is the generation every namespace was last planned with;
	// zero when some namespace was planned with an older one.
	Observed int64
	// Failed is the first write error of a namespace the policy selects in.
	Failed error
	// Unwatched are the kinds the policy names that have no cache, with why.
	Unwatched []string
	// Invalid is why the policy's selectors do not parse.
	Invalid error
}

// Status returns the status the summary gives a policy, from its current
// status (conditions keep their transition times while they hold).
func (s *Summary) Status(p *policyv1alpha1.VerticalPodAutoscalerPolicy) policyv1alpha1.VerticalPodAutoscalerPolicyStatus {
	st := *p.Status.DeepCopy()
	if s.Observed != 0 {
		st.ObservedGeneration = s.Observed
	}
	st.SelectedWorkloads, st.ManagedVPAs, st.Conflicts = s.Selected, s.Managed, int32(len(s.Conflicts))
	conflicts := slices.Clone(s.Conflicts)
	slices.Sort(conflicts)
	if len(conflicts) > maxConflicts {
		conflicts = conflicts[:maxConflicts]
	}
	st.ConflictingWorkloads = conflicts
	gen := p.Generation
	ready := metav1.Condition{Type: policyv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Reconciled", ObservedGeneration: gen,
		Message: fmt.Sprintf("%d selected workloads, %d with a VPA of this policy", s.Selected, s.Managed)}
	switch {
	case s.Invalid != nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "InvalidSpec", s.Invalid.Error()
	case len(s.Unwatched) > 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "KindNotWatched", strings.Join(s.Unwatched, "; ")
	case s.Failed != nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "WriteFailed", s.Failed.Error()
	case s.Observed == 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Reconciling", "Not every namespace has been planned with this generation yet"
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	conflicting := metav1.Condition{Type: policyv1alpha1.ConditionConflicting, Status: metav1.ConditionFalse, Reason: "NoConflict", ObservedGeneration: gen,
		Message: "No other policy or namespace label selects these workloads"}
	if len(s.Conflicts) > 0 {
		conflicting.Status, conflicting.Reason = metav1.ConditionTrue, "SharedWorkloads"
		conflicting.Message = fmt.Sprintf("%d workloads are selected by another source too; the one with precedence manages their VPAs, e.g. %s",
			len(s.Conflicts), conflicts[0])
	}
	meta.SetStatusCondition(&st.Conditions, conflicting)
	return st
}

// summary sums a policy's counts over the namespaces' last plans.
func (c *Controller) summary(p *policyv1alpha1.VerticalPodAutoscalerPolicy) *Summary {
	s := &Summary{Observed: p.Generation}
	if src, err := Compile(p); err != nil {
		s.Invalid = err
	} else {
		c.mu.Lock()
		for _, gk := range src.Kinds() {
			if err := c.kindErrs[gk]; err != nil {
				s.Unwatched = append(s.Unwatched, err.Error())
			} else if w, ok := c.watches[gk]; !ok || !w.HasSynced() {
				s.Unwatched = append(s.Unwatched, fmt.Sprintf("%s: waiting for its cache (the recommender needs list and watch on it)", kindName(gk)))
			}
		}
		c.mu.Unlock()
		slices.Sort(s.Unwatched)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ns := range c.nsIdx.ListKeys() {
		if !c.o.Namespaces.Allows(ns) {
			continue
		}
		r := c.results[ns]
		if r == nil || r.generations[p.Name] != p.Generation {
			s.Observed = 0
			continue
		}
		if r.err != nil && s.Failed == nil {
			s.Failed = fmt.Errorf("namespace %s: %w", ns, r.err)
		}
		if n := r.policies[p.Name]; n != nil {
			s.Selected += n.Selected
			s.Managed += n.Managed
			s.Conflicts = append(s.Conflicts, n.Conflicts...)
		}
	}
	return s
}

func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// syncStatus writes a policy's status when it changed.
func (c *Controller) syncStatus(ctx context.Context, name string) error {
	obj, exists, err := c.policiesIdx.GetByKey(name)
	if err != nil || !exists {
		return err
	}
	p := obj.(*policyv1alpha1.VerticalPodAutoscalerPolicy)
	if p.DeletionTimestamp != nil {
		return nil
	}
	s := c.summary(p)
	if s.Invalid != nil && !meta.IsStatusConditionPresentAndEqual(p.Status.Conditions, policyv1alpha1.ConditionReady, metav1.ConditionFalse) {
		c.recorder.Eventf(p, corev1.EventTypeWarning, ReasonInvalidPolicy, "%v", s.Invalid)
	}
	st := s.Status(p)
	if equalStatus(st, p.Status) {
		return nil
	}
	out := p.DeepCopy()
	out.Status = st
	_, err = c.c.Policies.VerticalPodAutoscalerPolicies().UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the status of policy %s: %w", name, err)
	}
	c.metrics.writes.WithLabelValues("status").Inc()
	return nil
}

// equalStatus reports whether two statuses are the same, as the status
// write compares them.
func equalStatus(a, b policyv1alpha1.VerticalPodAutoscalerPolicyStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}
