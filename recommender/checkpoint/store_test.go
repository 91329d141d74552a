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

package checkpoint

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpafake "github.com/openvpa/openvpa/apis/generated/clientset/versioned/fake"
)

// pagedCheckpoints serves n checkpoints through list requests that honour
// limit and continue, as the API server does, and records each request's
// limit.
func pagedCheckpoints(n int) (*vpafake.Clientset, *[]int64) {
	c := vpafake.NewSimpleClientset()
	var limits []int64
	c.PrependReactor("list", "verticalpodautoscalercheckpoints", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.ListActionImpl).GetListOptions()
		limits = append(limits, r.Limit)
		from := 0
		if r.Continue != "" {
			from, _ = strconv.Atoi(r.Continue)
		}
		to := n
		if r.Limit > 0 {
			to = min(n, from+int(r.Limit))
		}
		l := &vpav1.VerticalPodAutoscalerCheckpointList{}
		for i := from; i < to; i++ {
			l.Items = append(l.Items, vpav1.VerticalPodAutoscalerCheckpoint{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("vpa%d-app", i)},
				Spec:       vpav1.VerticalPodAutoscalerCheckpointSpec{VPAObjectName: fmt.Sprintf("vpa%d", i), ContainerName: "app"},
			})
		}
		if to < n {
			l.Continue = strconv.Itoa(to)
		}
		return true, l, nil
	})
	return c, &limits
}

// TestEachListsPages: the checkpoints are listed ListPageSize at a time
// (upstream lists them in one request, which at 10,000 VPAs holds every
// decoded checkpoint at once), every one is visited once, and an error of
// fn stops the listing.
func TestEachListsPages(t *testing.T) {
	const n = 2*ListPageSize + 7
	c, limits := pagedCheckpoints(n)
	s := NewStore(c.AutoscalingV1())
	seen := map[string]bool{}
	if err := s.Each(context.Background(), "ns", func(cp *vpav1.VerticalPodAutoscalerCheckpoint) error {
		if seen[cp.Name] {
			t.Errorf("%s visited twice", cp.Name)
		}
		seen[cp.Name] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("visited %d checkpoints, want %d", len(seen), n)
	}
	if len(*limits) != 3 {
		t.Errorf("%d list requests, want 3 pages", len(*limits))
	}
	for _, l := range *limits {
		if l != ListPageSize {
			t.Errorf("list request with limit %d, want %d", l, ListPageSize)
		}
	}

	stop := fmt.Errorf("enough")
	visited := 0
	err := s.Each(context.Background(), "ns", func(*vpav1.VerticalPodAutoscalerCheckpoint) error {
		visited++
		if visited == 3 {
			return stop
		}
		return nil
	})
	if visited != 3 || err == nil {
		t.Errorf("Each visited %d checkpoints and returned %v after fn failed on the third", visited, err)
	}
}

// TestGarbageCollectOverPages deletes what keep rejects on every page.
func TestGarbageCollectOverPages(t *testing.T) {
	const n = ListPageSize + 3
	c, _ := pagedCheckpoints(n)
	var deletes []string
	c.PrependReactor("delete", "verticalpodautoscalercheckpoints", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deletes = append(deletes, a.(k8stesting.DeleteActionImpl).GetName())
		return true, nil, nil
	})
	s := NewStore(c.AutoscalingV1())
	deleted, err := s.GarbageCollect(context.Background(), "ns", func(cp *vpav1.VerticalPodAutoscalerCheckpoint) bool {
		i, _ := strconv.Atoi(cp.Spec.VPAObjectName[len("vpa"):])
		return i%100 != 0
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 6 || len(deletes) != 6 {
		t.Fatalf("deleted %v (requests %v), want vpa0, vpa100, ... vpa500", deleted, deletes)
	}
	if deleted[5] != (Key{Namespace: "ns", VPA: "vpa500", Container: "app"}) || deletes[5] != "vpa500-app" {
		t.Errorf("last deleted %+v (request %s), want vpa500's", deleted[5], deletes[5])
	}
}
