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

package target

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func matcherTarget(t *testing.T, name, selector string, age time.Duration) *Target {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	return &Target{
		VPA: &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age))}},
		Ref:      Ref{Kind: "Deployment", Name: name},
		Selector: sel,
	}
}

func TestMatcherSelecting(t *testing.T) {
	targets := []*Target{
		matcherTarget(t, "web", "app=web", time.Hour),
		matcherTarget(t, "web-old", "app=web,tier=front", 2*time.Hour), // older: stronger
		matcherTarget(t, "any-of", "app in (api,web)", 0),
		matcherTarget(t, "exists", "canary", 0),
		matcherTarget(t, "not-db", "app!=db", 0),
		matcherTarget(t, "everything", "", 0),
	}
	m := NewMatcher(targets)
	for _, tc := range []struct {
		name   string
		ns     string
		labels map[string]string
		want   []string
	}{
		{"equality and in", "ns", map[string]string{"app": "web", "tier": "back"}, []string{"web", "any-of", "everything", "not-db"}},
		{"strongest first", "ns", map[string]string{"app": "web", "tier": "front"}, []string{"web-old", "web", "any-of", "everything", "not-db"}},
		{"in, other value", "ns", map[string]string{"app": "api"}, []string{"any-of", "everything", "not-db"}},
		{"exists", "ns", map[string]string{"app": "db", "canary": "true"}, []string{"everything", "exists"}},
		{"other namespace", "other", map[string]string{"app": "web"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tg := range m.Selecting(tc.ns, tc.labels) {
				got = append(got, tg.VPA.Name)
			}
			// Ties in age are broken by name.
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Selecting = %v, want %v", got, tc.want)
			}
		})
	}
	if m.Len() != len(targets) {
		t.Errorf("Len = %d, want %d", m.Len(), len(targets))
	}
}

// BenchmarkSelecting10000 finds the VPA of each of 10,000 pods among 10,000
// app=<name> selectors in one namespace, as a loop of the recommender does.
func BenchmarkSelecting10000(b *testing.B) {
	const n = 10000
	targets := make([]*Target, n)
	for i := range targets {
		sel := labels.SelectorFromSet(labels.Set{"app": fmt.Sprintf("app-%05d", i)})
		targets[i] = &Target{VPA: &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("app-%05d", i)}},
			Ref: Ref{Kind: "Deployment", Name: fmt.Sprintf("app-%05d", i)}, Selector: sel}
	}
	m := NewMatcher(targets)
	pods := make([]map[string]string, n)
	for i := range pods {
		pods[i] = map[string]string{"app": fmt.Sprintf("app-%05d", i), "pod-template-hash": "5d4f8c7b9"}
	}
	b.ResetTimer()
	for range b.N {
		for _, p := range pods {
			if len(m.Selecting("ns", p)) != 1 {
				b.Fatal("not one VPA")
			}
		}
	}
}
