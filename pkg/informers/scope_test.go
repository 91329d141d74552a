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

package informers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/openvpa/openvpa/pkg/testpoll"
)

// source is an in-memory API for one resource. streaming serves lists as
// watches that send the initial events (a streaming list); otherwise it says
// it cannot, and reflectors list and watch.
type source struct {
	*fcache.FakeControllerSource
	streaming bool
	streamed  *atomic.Int32 // streaming lists served
}

func (s source) IsWatchListSemanticsUnSupported() bool { return !s.streaming }

func (s source) Watch(o metav1.ListOptions) (watch.Interface, error) {
	if !s.streaming || o.SendInitialEvents == nil || !*o.SendInitialEvents {
		return s.FakeControllerSource.Watch(o)
	}
	s.streamed.Add(1)
	l, err := s.List(metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	rv, err := meta.NewAccessor().ResourceVersion(l)
	if err != nil {
		return nil, err
	}
	var events []watch.Event
	for _, o := range items {
		events = append(events, watch.Event{Type: watch.Added, Object: o})
	}
	events = append(events, watch.Event{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}})
	return s.Broadcaster.WatchWithPrefix(events)
}

func pod(ns, name, image string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
}

// recorder records the handler calls, as "add ns/name", "update ns/name"
// and "delete ns/name".
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) record(verb string, obj any) {
	k, _ := cache.MetaNamespaceKeyFunc(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, verb+" "+k)
}

func (r *recorder) OnAdd(obj any, _ bool) { r.record("add", obj) }
func (r *recorder) OnUpdate(_, obj any)   { r.record("update", obj) }
func (r *recorder) OnDelete(obj any)      { r.record("delete", obj) }
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	sort.Strings(out)
	return out
}

func cachedKeys(inf Informer) []string {
	ks := inf.GetIndexer().ListKeys()
	sort.Strings(ks)
	return ks
}

func inNamespaces(nss ...string) func(string) bool {
	return func(ns string) bool { return slices.Contains(nss, ns) }
}

// newSource returns a source holding pods.
func newSource(streaming bool, pods ...*corev1.Pod) source {
	src := source{FakeControllerSource: fcache.NewFakeControllerSource(), streaming: streaming, streamed: &atomic.Int32{}}
	for _, p := range pods {
		src.Add(p)
	}
	return src
}

// startScope runs a Scope with one pod informer over a new source holding
// pods; the informer transforms with transform and calls handler (if not
// nil). Nothing is cached until the test sets the scope.
func startScope(t *testing.T, streaming bool, transform cache.TransformFunc, handler cache.ResourceEventHandler, pods ...*corev1.Pod) (source, *Scope, *scopedInformer) {
	t.Helper()
	src := newSource(streaming, pods...)
	scope := NewScope()
	inf := newScopedInformer(src, &corev1.Pod{}, "pods", transform)
	scope.add(inf)
	if handler != nil {
		if _, err := inf.AddEventHandler(handler); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scope.Start(ctx)
	return src, scope, inf
}

func TestScopeKeepsOnlyItsNamespacesAndFollowsThem(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			// The transform marks what it saw; the scope must drop other
			// namespaces before it.
			var transformed sync.Map
			transform := func(obj any) (any, error) {
				if p, ok := obj.(*corev1.Pod); ok {
					transformed.Store(p.Namespace, true)
					p.Spec.Containers[0].Image = strings.ToUpper(p.Spec.Containers[0].Image)
				}
				return obj, nil
			}
			rec := &recorder{}
			src, scope, inf := startScope(t, streaming, transform, rec, pod("a", "p1", "v1"), pod("b", "p2", "v1"), pod("c", "p3", "v1"))
			if scope.SyncedGeneration() != 0 || inf.HasSynced() {
				t.Fatal("synced before any scope was set")
			}

			gen1 := scope.Set(inNamespaces("a"))
			testpoll.Until(t, 10*time.Second, "generation 1", func() bool { return scope.Synced(gen1) })
			if got, want := cachedKeys(inf), []string{"a/p1"}; !slices.Equal(got, want) {
				t.Fatalf("cached %v, want %v", got, want)
			}
			if _, ok := transformed.Load("b"); ok {
				t.Error("an object outside the scope was transformed")
			}
			obj, _, _ := inf.GetIndexer().GetByKey("a/p1")
			if img := obj.(*corev1.Pod).Spec.Containers[0].Image; img != "V1" {
				t.Errorf("cached image %q, want the transformed V1", img)
			}
			if got, want := rec.take(), []string{"add a/p1"}; !slices.Equal(got, want) {
				t.Errorf("handler calls %v, want %v", got, want)
			}

			// Watched changes: only the scope's namespaces.
			src.Add(pod("b", "p4", "v1"))
			src.Modify(pod("a", "p1", "v2"))
			src.Add(pod("a", "p5", "v1"))
			testpoll.Until(t, 10*time.Second, "a/p5", func() bool { _, ok, _ := inf.GetIndexer().GetByKey("a/p5"); return ok })
			if got, want := cachedKeys(inf), []string{"a/p1", "a/p5"}; !slices.Equal(got, want) {
				t.Fatalf("cached %v after watched changes, want %v", got, want)
			}
			obj, _, _ = inf.GetIndexer().GetByKey("a/p1")
			if img := obj.(*corev1.Pod).Spec.Containers[0].Image; img != "V2" {
				t.Errorf("a/p1 image %q after its update, want V2", img)
			}
			if got, want := rec.take(), []string{"add a/p5", "update a/p1"}; !slices.Equal(got, want) {
				t.Errorf("handler calls %v, want %v", got, want)
			}

			// Wider: the dropped namespace's objects, including those added
			// while it was out of scope, arrive with the new list.
			gen2 := scope.Set(inNamespaces("a", "b"))
			testpoll.Until(t, 10*time.Second, "generation 2", func() bool { return scope.Synced(gen2) })
			if got, want := cachedKeys(inf), []string{"a/p1", "a/p5", "b/p2", "b/p4"}; !slices.Equal(got, want) {
				t.Fatalf("cached %v, want %v", got, want)
			}
			if got, want := rec.take(), []string{"add b/p2", "add b/p4", "update a/p1", "update a/p5"}; !slices.Equal(got, want) {
				t.Errorf("handler calls %v, want %v", got, want)
			}

			// Narrower: the namespace left goes.
			gen3 := scope.Set(inNamespaces("b"))
			testpoll.Until(t, 10*time.Second, "generation 3", func() bool { return scope.Synced(gen3) })
			if got, want := cachedKeys(inf), []string{"b/p2", "b/p4"}; !slices.Equal(got, want) {
				t.Fatalf("cached %v, want %v", got, want)
			}
			if got, want := rec.take(), []string{"delete a/p1", "delete a/p5", "update b/p2", "update b/p4"}; !slices.Equal(got, want) {
				t.Errorf("handler calls %v, want %v", got, want)
			}

			// The new generation watches: deletions in scope arrive, others
			// are ignored.
			src.Delete(pod("a", "p1", "v2"))
			src.Delete(pod("b", "p2", "v1"))
			testpoll.Until(t, 10*time.Second, "b/p2 deleted", func() bool { _, ok, _ := inf.GetIndexer().GetByKey("b/p2"); return !ok })
			if got, want := cachedKeys(inf), []string{"b/p4"}; !slices.Equal(got, want) {
				t.Fatalf("cached %v, want %v", got, want)
			}
			if got, want := rec.take(), []string{"delete b/p2"}; !slices.Equal(got, want) {
				t.Errorf("handler calls %v, want %v", got, want)
			}
			if n := src.streamed.Load(); streaming && n != 3 {
				t.Errorf("%d streaming lists for three generations, want 3", n)
			}
		})
	}
}

func TestScopeKeepsWhatItHeldWhenItWidens(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			var mu sync.Mutex
			transforms := map[string]int{}
			transform := func(obj any) (any, error) {
				k, _ := cache.MetaNamespaceKeyFunc(obj)
				mu.Lock()
				transforms[k]++
				mu.Unlock()
				return obj, nil
			}
			count := func(k string) int {
				mu.Lock()
				defer mu.Unlock()
				return transforms[k]
			}
			src, scope, inf := startScope(t, streaming, transform, nil, pod("a", "p1", "v1"), pod("b", "p2", "v1"))
			cached := func(k string) any { o, _, _ := inf.GetIndexer().GetByKey(k); return o }

			gen := scope.Set(inNamespaces("b"))
			testpoll.Until(t, 10*time.Second, "b", func() bool { return scope.Synced(gen) })
			p2 := cached("b/p2")
			gen = scope.Set(inNamespaces("a", "b"))
			testpoll.Until(t, 10*time.Second, "a and b", func() bool { return scope.Synced(gen) })
			if got, want := cachedKeys(inf), []string{"a/p1", "b/p2"}; !slices.Equal(got, want) {
				t.Fatalf("cached %v, want %v", got, want)
			}
			if cached("b/p2") != p2 || count("b/p2") != 1 {
				t.Errorf("b/p2 transformed %d times and cached anew: a wider list must keep the unchanged objects it held", count("b/p2"))
			}

			// Changed while out of scope, then back: the new version is
			// transformed; the unchanged one is still kept.
			gen = scope.Set(inNamespaces("b"))
			testpoll.Until(t, 10*time.Second, "b again", func() bool { return scope.Synced(gen) })
			src.Modify(pod("a", "p1", "v2"))
			gen = scope.Set(inNamespaces("a", "b"))
			testpoll.Until(t, 10*time.Second, "a and b again", func() bool { return scope.Synced(gen) })
			if n := count("a/p1"); n != 2 {
				t.Errorf("a/p1 transformed %d times, want 2 (once per version)", n)
			}
			if got := cached("a/p1").(*corev1.Pod).Spec.Containers[0].Image; got != "v2" {
				t.Errorf("a/p1 cached with image %s, want the new version's v2", got)
			}
			if cached("b/p2") != p2 || count("b/p2") != 1 {
				t.Errorf("b/p2 transformed %d times and cached anew after three lists, want once", count("b/p2"))
			}
		})
	}
}

func TestScopedSetSyncsAndCountsWhatItCaches(t *testing.T) {
	src := newSource(true, pod("a", "p1", "v1"), pod("a", "p2", "v1"), pod("b", "p3", "v1"))
	set := Set{Scope: NewScope()}
	inf := newScopedInformer(src, &corev1.Pod{}, "pods", nil)
	set.Scope.add(inf)
	set.all = append(set.all, inf)
	set.resources = append(set.resources, "pods")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	set.Start(ctx)
	for _, tc := range []struct {
		keep func(string) bool
		want string
	}{
		{keep: func(string) bool { return false }, want: "0"}, // a replica with no shard syncs, empty
		{keep: inNamespaces("a"), want: "2"},
		{keep: inNamespaces("a", "b"), want: "3"},
	} {
		gen := set.Scope.Set(tc.keep)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := set.WaitForSync(wctx); err != nil {
			t.Fatal(err)
		}
		wcancel()
		testpoll.Until(t, 10*time.Second, "the generation", func() bool { return set.Scope.Synced(gen) })
		want := "# HELP vpa_recommender_cached_objects Objects in the informer caches, by resource.\n" +
			"# TYPE vpa_recommender_cached_objects gauge\n" +
			"vpa_recommender_cached_objects{resource=\"pods\"} " + tc.want + "\n"
		if err := testutil.CollectAndCompare(set.Collector("vpa_recommender"), strings.NewReader(want)); err != nil {
			t.Error(err)
		}
	}
}

// The object standing for dropped ones has an empty key, so that a
// streaming list holds one entry for all of them.
func TestDroppedObjectsShareOneKey(t *testing.T) {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(dropped)
	if err != nil || k != "" {
		t.Fatalf("key of the dropped object: %q, %v; want the empty key", k, err)
	}
	var _ runtime.Object = dropped
}
