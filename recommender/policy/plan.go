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
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
)

// NamespaceLabelSource is how status and events name the namespace label
// as the source of a managed VPA.
const NamespaceLabelSource = policyv1alpha1.NamespaceLabelSource

// DefaultKinds returns the kinds a policy without kinds, and the namespace
// label, cover: the well-known controllers (builtin).
func DefaultKinds() map[schema.GroupKind]bool {
	out := make(map[schema.GroupKind]bool, len(builtin))
	for gk := range builtin {
		out[gk] = true
	}
	return out
}

// Workload is what the controller reads of a workload: its identity, its
// labels and whether another controller owns it.
type Workload struct {
	// ObjectMeta holds the name, namespace, UID, resource version and labels.
	metav1.ObjectMeta
	GroupKind  schema.GroupKind
	APIVersion string
	// Owned is true when another controller owns the workload (a
	// Deployment's ReplicaSet): its owner is selected instead.
	Owned bool
}

// key names the workload in status and logs: namespace/Kind/name.
func (w *Workload) key() string { return w.Namespace + "/" + w.GroupKind.Kind + "/" + w.Name }

// Source is one compiled selection: a policy, or a namespace's label.
type Source struct {
	// Policy is the policy's name; empty for the namespace label.
	Policy   string
	Priority int32
	Created  time.Time
	// Generation of the policy, for its status.
	Generation int64
	namespaces labels.Selector
	workloads  labels.Selector
	kinds      map[schema.GroupKind]bool
	template   policyv1alpha1.VerticalPodAutoscalerTemplate
}

// Name is how the source is named to users.
func (s *Source) Name() string {
	if s.Policy == "" {
		return NamespaceLabelSource
	}
	return "policy " + s.Policy
}

// Compile checks a policy and returns its Source.
func Compile(p *policyv1alpha1.VerticalPodAutoscalerPolicy) (*Source, error) {
	nsSel, err := metav1.LabelSelectorAsSelector(&p.Spec.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.namespaceSelector: %w", err)
	}
	wlSel := labels.Everything()
	if p.Spec.Selector != nil {
		if wlSel, err = metav1.LabelSelectorAsSelector(p.Spec.Selector); err != nil {
			return nil, fmt.Errorf("spec.selector: %w", err)
		}
	}
	kinds := DefaultKinds()
	if len(p.Spec.Kinds) > 0 {
		kinds = map[schema.GroupKind]bool{}
		for _, k := range p.Spec.Kinds {
			kinds[schema.GroupKind{Group: k.APIGroup, Kind: k.Kind}] = true
		}
	}
	return &Source{
		Policy: p.Name, Priority: p.Spec.Priority, Created: p.CreationTimestamp.Time, Generation: p.Generation,
		namespaces: nsSel, workloads: wlSel, kinds: kinds, template: p.Spec.Template,
	}, nil
}

// Kinds returns the kinds the source covers.
func (s *Source) Kinds() []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(s.kinds))
	for gk := range s.kinds {
		out = append(out, gk)
	}
	return out
}

// NamespaceModes are the values of the namespace label.
var NamespaceModes = []vpav1.UpdateMode{vpav1.UpdateModeOff, vpav1.UpdateModeInitial, vpav1.UpdateModeRecreate,
	vpav1.UpdateModeInPlaceOrRecreate, vpav1.UpdateModeInPlace}

// NamespaceSource returns the source of a namespace's label: nil without
// the label, an error for a value that is not a mode.
func NamespaceSource(nsLabels map[string]string) (*Source, error) {
	v, ok := nsLabels[policyv1alpha1.LabelNamespaceUpdateMode]
	if !ok {
		return nil, nil
	}
	mode := vpav1.UpdateMode(v)
	if !slices.Contains(NamespaceModes, mode) {
		return nil, fmt.Errorf("label %s=%q is not one of %v", policyv1alpha1.LabelNamespaceUpdateMode, v, NamespaceModes)
	}
	return &Source{
		namespaces: labels.Everything(), workloads: labels.Everything(), kinds: DefaultKinds(),
		template: policyv1alpha1.VerticalPodAutoscalerTemplate{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode}},
	}, nil
}

// Precedes is the precedence of sources: the namespace label first, then
// the higher priority, the older policy, the name that sorts first.
func Precedes(a, b *Source) int {
	if (a.Policy == "") != (b.Policy == "") {
		if a.Policy == "" {
			return -1
		}
		return 1
	}
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if !a.Created.Equal(b.Created) {
		return a.Created.Compare(b.Created)
	}
	return strings.Compare(a.Policy, b.Policy)
}

// Counts is what a namespace's plan says about one policy.
type Counts struct {
	Selected, Managed int32
	// Conflicts name the conflicting workloads with what else selects them.
	Conflicts []string
}

// Displacement is a managed VPA a user's VPA displaces.
type Displacement struct {
	User, Managed *vpav1.VerticalPodAutoscaler
}

// Plan is what a namespace needs.
type Plan struct {
	Creates []*vpav1.VerticalPodAutoscaler
	// Updates are the existing VPAs with the fields the controller owns set.
	Updates []*vpav1.VerticalPodAutoscaler
	Deletes []*vpav1.VerticalPodAutoscaler
	// Displaced are among Deletes: the user's VPA is why.
	Displaced []Displacement
	// Policies are the counts by policy name.
	Policies map[string]*Counts
}

// Input is what a namespace is planned from.
type Input struct {
	Namespace string
	// NamespaceLabels select policies; its own label is NamespaceSource.
	NamespaceLabels map[string]string
	// Sources are the cluster's policies, in any order; the namespace's
	// label is added from NamespaceLabels.
	Sources   []*Source
	Workloads []*Workload
	VPAs      []*vpav1.VerticalPodAutoscaler
	// Unwatched are the kinds whose workloads are not known yet (their cache
	// has not synced): their managed VPAs are kept as they are.
	Unwatched map[schema.GroupKind]bool
}

// IsManaged reports whether the policy controller made and keeps vpa.
func IsManaged(vpa *vpav1.VerticalPodAutoscaler) bool {
	return vpa.Labels[policyv1alpha1.LabelManagedBy] == policyv1alpha1.ManagedByPolicyController
}

type targetKey struct {
	group, kind, name string
}

func targetOf(vpa *vpav1.VerticalPodAutoscaler) (targetKey, bool) {
	ref := vpa.Spec.TargetRef
	if ref == nil {
		return targetKey{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return targetKey{}, false
	}
	return targetKey{group: gv.Group, kind: ref.Kind, name: ref.Name}, true
}

// PlanNamespace returns what makes the namespace's managed VPAs what the
// sources say (nsErr: the namespace label's value is invalid, and the
// label is ignored).
func PlanNamespace(in Input) (plan Plan, nsErr error) {
	plan.Policies = map[string]*Counts{}
	sources := make([]*Source, 0, len(in.Sources)+1)
	nsLabels := labels.Set(in.NamespaceLabels)
	for _, s := range in.Sources {
		if s.namespaces.Matches(nsLabels) {
			sources = append(sources, s)
		}
	}
	nsSource, nsErr := NamespaceSource(in.NamespaceLabels)
	if nsSource != nil {
		sources = append(sources, nsSource)
	}
	slices.SortStableFunc(sources, Precedes)

	users := map[targetKey]*vpav1.VerticalPodAutoscaler{}
	managed := map[string]*vpav1.VerticalPodAutoscaler{}
	for _, v := range in.VPAs {
		if IsManaged(v) {
			managed[v.Name] = v
			continue
		}
		if k, ok := targetOf(v); ok {
			if prev, seen := users[k]; !seen || v.Name < prev.Name {
				users[k] = v
			}
		}
	}
	counts := func(policy string) *Counts {
		c := plan.Policies[policy]
		if c == nil {
			c = &Counts{}
			plan.Policies[policy] = c
		}
		return c
	}
	keep := map[string]bool{}
	var matches []*Source
	for _, w := range in.Workloads {
		if w.Owned {
			continue
		}
		matches = matches[:0]
		wl := labels.Set(w.Labels)
		for _, s := range sources {
			if s.kinds[w.GroupKind] && s.workloads.Matches(wl) {
				matches = append(matches, s)
			}
		}
		if len(matches) == 0 {
			continue
		}
		for _, s := range matches {
			if s.Policy == "" {
				continue
			}
			c := counts(s.Policy)
			c.Selected++
			if len(matches) > 1 {
				c.Conflicts = append(c.Conflicts, conflict(w, s, matches))
			}
		}
		name := ManagedName(w.GroupKind.Kind, w.Name)
		if user, ok := users[targetKey{group: w.GroupKind.Group, kind: w.GroupKind.Kind, name: w.Name}]; ok {
			if m, ok := managed[name]; ok {
				plan.Displaced = append(plan.Displaced, Displacement{User: user, Managed: m})
			}
			continue
		}
		winner := matches[0]
		if winner.Policy != "" {
			counts(winner.Policy).Managed++
		}
		want := desired(in.Namespace, name, w, winner)
		keep[name] = true
		if have, ok := managed[name]; ok {
			if upd := update(have, want); upd != nil {
				plan.Updates = append(plan.Updates, upd)
			}
			continue
		}
		plan.Creates = append(plan.Creates, want)
	}
	for name, v := range managed {
		if k, ok := targetOf(v); ok && in.Unwatched[schema.GroupKind{Group: k.group, Kind: k.kind}] {
			continue
		}
		if !keep[name] {
			plan.Deletes = append(plan.Deletes, v)
		}
	}
	slices.SortFunc(plan.Deletes, func(a, b *vpav1.VerticalPodAutoscaler) int { return strings.Compare(a.Name, b.Name) })
	return plan, nsErr
}

// conflict describes a workload s shares with the other matches.
func conflict(w *Workload, s *Source, matches []*Source) string {
	var others []string
	for _, o := range matches {
		if o != s {
			others = append(others, o.Name())
		}
	}
	return fmt.Sprintf("%s (also %s)", w.key(), strings.Join(others, ", "))
}

// maxName is the longest name of an object (a DNS subdomain).
const maxName = 253

// ManagedName is the name of a workload's managed VPA: its kind in lower
// case and its name, shortened with a hash past the longest name.
func ManagedName(kind, name string) string {
	n := strings.ToLower(kind) + "-" + name
	if len(n) <= maxName {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return strings.TrimRight(n[:maxName-11], "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// desired is the managed VPA of w made by s.
func desired(namespace, name string, w *Workload, s *Source) *vpav1.VerticalPodAutoscaler {
	l := map[string]string{policyv1alpha1.LabelManagedBy: policyv1alpha1.ManagedByPolicyController}
	if s.Policy != "" {
		l[policyv1alpha1.LabelPolicy] = s.Policy
	}
	t := s.template.DeepCopy()
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, Labels: l,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: w.APIVersion, Kind: w.GroupKind.Kind, Name: w.Name, UID: w.UID}},
		},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:      &autoscalingv1.CrossVersionObjectReference{APIVersion: w.APIVersion, Kind: w.GroupKind.Kind, Name: w.Name},
			UpdatePolicy:   t.UpdatePolicy,
			ResourcePolicy: t.ResourcePolicy,
			Recommenders:   t.Recommenders,
		},
	}
}

// update returns have with want's labels, owner and spec, or nil when it
// has them already. Other labels, annotations and owners are kept.
func update(have, want *vpav1.VerticalPodAutoscaler) *vpav1.VerticalPodAutoscaler {
	same := have.Labels[policyv1alpha1.LabelPolicy] == want.Labels[policyv1alpha1.LabelPolicy] &&
		hasOwner(have, want.OwnerReferences[0]) &&
		equality.Semantic.DeepEqual(have.Spec.TargetRef, want.Spec.TargetRef) &&
		equality.Semantic.DeepEqual(have.Spec.UpdatePolicy, want.Spec.UpdatePolicy) &&
		equality.Semantic.DeepEqual(have.Spec.ResourcePolicy, want.Spec.ResourcePolicy) &&
		equality.Semantic.DeepEqual(have.Spec.Recommenders, want.Spec.Recommenders)
	if same {
		return nil
	}
	out := have.DeepCopy()
	out.Labels = map[string]string{}
	for k, v := range have.Labels {
		if k != policyv1alpha1.LabelPolicy {
			out.Labels[k] = v
		}
	}
	for k, v := range want.Labels {
		out.Labels[k] = v
	}
	if !hasOwner(have, want.OwnerReferences[0]) {
		owners := out.OwnerReferences[:0:0]
		for _, o := range out.OwnerReferences {
			if o.Kind != want.OwnerReferences[0].Kind || o.Name != want.OwnerReferences[0].Name {
				owners = append(owners, o)
			}
		}
		out.OwnerReferences = append(owners, want.OwnerReferences[0])
	}
	out.Spec.TargetRef = want.Spec.TargetRef
	out.Spec.UpdatePolicy = want.Spec.UpdatePolicy
	out.Spec.ResourcePolicy = want.Spec.ResourcePolicy
	out.Spec.Recommenders = want.Spec.Recommenders
	return out
}

func hasOwner(v *vpav1.VerticalPodAutoscaler, want metav1.OwnerReference) bool {
	for _, o := range v.OwnerReferences {
		if o.UID == want.UID && o.Kind == want.Kind && o.Name == want.Name {
			return true
		}
	}
	return false
}
