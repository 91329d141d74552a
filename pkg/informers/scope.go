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
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Informer is what the components read of an informer: its cache, its
// event handlers and whether it has synced. Both client-go's shared
// informers and a Scope's informers are Informers.
type Informer interface {
	GetIndexer() cache.Indexer
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	AddIndexers(indexers cache.Indexers) error
	HasSynced() bool
}

// Scope narrows the caches of a Set to the namespaces it keeps, and can
// move. The API server cannot filter by what a replica serves, so each
// informer still lists and watches its resource in every namespace it is
// given, but keeps only the objects of namespaces in scope: the others are
// dropped as they are decoded, before any transform or cache sees them.
//
// Set changes the namespaces kept. A cache cannot learn a namespace's
// objects it dropped, so each informer lists again: it stops watching, and
// its cache holds what it held (no longer updated) until the new list
// replaces all of it with exactly the new namespaces' objects.
// SyncedGeneration says which generations every cache may hold meanwhile,
// Synced when every informer holds a generation.
type Scope struct {
	mu        sync.Mutex
	gen       uint64
	keep      func(namespace string) bool
	informers []*scopedInformer
	ctx       context.Context // set by Start
	changed   chan struct{}
}

// NewScope returns a Scope that keeps no namespace until Set.
func NewScope() *Scope {
	return &Scope{keep: func(string) bool { return false }, changed: make(chan struct{}, 1)}
}

// Set makes keep the namespaces the caches hold, and returns the new
// generation. The informers list again in the background; Synced(gen)
// reports when all of them hold exactly keep's namespaces.
func (s *Scope) Set(keep func(namespace string) bool) uint64 {
	s.mu.Lock()
	s.gen++
	s.keep = keep
	gen := s.gen
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return gen
}

// SyncedGeneration returns the oldest generation an informer's cache holds:
// every cache holds the namespaces of this generation or of a later one,
// and has been updated by a watch since it listed them unless a later
// generation is still listing. 0: some informer has not listed yet.
func (s *Scope) SyncedGeneration() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	oldest := s.gen
	for _, inf := range s.informers {
		oldest = min(oldest, inf.synced.Load())
	}
	return oldest
}

// Synced reports whether every informer's cache holds generation gen or a
// later one.
func (s *Scope) Synced(gen uint64) bool { return s.SyncedGeneration() >= gen }

// add registers an informer; it starts with the scope.
func (s *Scope) add(inf *scopedInformer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx != nil {
		panic("informers: informer added to a Scope after Start")
	}
	s.informers = append(s.informers, inf)
}

// Start runs the informers until ctx ends, each listing again whenever Set
// moves the scope.
func (s *Scope) Start(ctx context.Context) {
	s.mu.Lock()
	if s.ctx != nil {
		s.mu.Unlock()
		return
	}
	s.ctx = ctx
	s.mu.Unlock()
	go s.run(ctx)
}

func (s *Scope) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	var running uint64
	for {
		s.mu.Lock()
		gen, keep, infs := s.gen, s.keep, s.informers
		s.mu.Unlock()
		if gen != running && gen > 0 {
			running = gen
			logger.V(2).Info("Listing the caches for a new scope", "generation", gen, "informers", len(infs))
			for _, inf := range infs {
				inf.restart(ctx, gen, keep)
			}
		}
		select {
		case <-ctx.Done():
			for _, inf := range infs {
				inf.stop()
			}
			return
		case <-s.changed:
		}
	}
}

// dropped stands for every object outside the scope: all of them share its
// empty key, so a streaming list holds one entry for them, not one per
// object.
var dropped runtime.Object = &metav1.PartialObjectMetadata{}

// scopedInformer is an informer whose reflector is replaced whenever its
// Scope moves. Its cache lives as long as it: listers built on it follow
// every generation.
type scopedInformer struct {
	lw        cache.ListerWatcher
	obj       runtime.Object
	name      string
	transform cache.TransformFunc
	indexer   cache.Indexer
	synced    atomic.Uint64 // generation of the last list that replaced the cache
	first     chan struct{} // closed by the first list
	firstOnce sync.Once

	mu       sync.Mutex
	handlers []cache.ResourceEventHandler
	cancel   context.CancelFunc
	done     chan struct{}
}

func newScopedInformer(lw cache.ListerWatcher, obj runtime.Object, name string, transform cache.TransformFunc) *scopedInformer {
	if transform == nil {
		transform = func(o any) (any, error) { return o, nil }
	}
	return &scopedInformer{lw: lw, obj: obj, name: name, transform: transform, first: make(chan struct{}),
		indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
}

func (i *scopedInformer) GetIndexer() cache.Indexer { return i.indexer }
func (i *scopedInformer) HasSynced() bool           { return i.synced.Load() > 0 }

// AddIndexers adds indexes to the cache.
func (i *scopedInformer) AddIndexers(indexers cache.Indexers) error {
	return i.indexer.AddIndexers(indexers)
}

// AddEventHandler registers a handler. It is called from the reflector's
// goroutine: on a new list, OnUpdate for objects the cache held already,
// OnAdd for new ones and OnDelete for those gone.
func (i *scopedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
	return registration{i}, nil
}

type registration struct{ i *scopedInformer }

func (r registration) HasSynced() bool                     { return r.i.HasSynced() }
func (r registration) HasSyncedChecker() cache.DoneChecker { return r }
func (r registration) Name() string                        { return r.i.name }
func (r registration) Done() <-chan struct{}               { return r.i.first }

func (i *scopedInformer) markSynced(gen uint64) {
	i.synced.Store(gen)
	i.firstOnce.Do(func() { close(i.first) })
}

func (i *scopedInformer) eachHandler(f func(cache.ResourceEventHandler)) {
	i.mu.Lock()
	hs := i.handlers
	i.mu.Unlock()
	for _, h := range hs {
		f(h)
	}
}

// restart stops the running reflector, waits for it, and starts one that
// keeps the namespaces of keep, as generation gen.
func (i *scopedInformer) restart(ctx context.Context, gen uint64, keep func(string) bool) {
	i.stop()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	i.mu.Lock()
	i.cancel, i.done = cancel, done
	i.mu.Unlock()
	store := &generationStore{i: i, gen: gen, keep: keep}
	logger := klog.FromContext(ctx)
	r := cache.NewReflectorWithOptions(i.lw, i.obj, store, cache.ReflectorOptions{
		Name: fmt.Sprintf("%s (scope generation %d)", i.name, gen), Logger: &logger})
	go func() {
		defer close(done)
		r.RunWithContext(rctx)
	}()
}

func (i *scopedInformer) stop() {
	i.mu.Lock()
	cancel, done := i.cancel, i.done
	i.cancel, i.done = nil, nil
	i.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// generationStore is one reflector's view of the cache: it keeps the
// objects of its generation's namespaces, transformed. One reflector at a
// time writes the cache.
type generationStore struct {
	i    *scopedInformer
	gen  uint64
	keep func(string) bool

	mu sync.Mutex
	// streamed holds what the streaming list's transform returned: Replace
	// takes those objects as they are rather than transforming them again.
	// Cached objects are pointers, so the set holds one word per object.
	streamed map[any]struct{}
}

var _ cache.TransformingStore = (*generationStore)(nil)

// Transformer drops the objects of other namespaces and transforms the
// others; the reflector's streaming list applies it as it decodes, then
// passes what it kept to Replace.
func (s *generationStore) Transformer() cache.TransformFunc { return s.applyStreamed }

func (s *generationStore) applyStreamed(obj any) (any, error) {
	o, err := s.apply(obj, true)
	if err != nil || o == dropped {
		return o, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streamed == nil {
		s.streamed = map[any]struct{}{}
	}
	s.streamed[o] = struct{}{}
	return o, nil
}

// Store methods that a reflector never calls.
func (s *generationStore) List() []any                            { return s.i.indexer.List() }
func (s *generationStore) ListKeys() []string                     { return s.i.indexer.ListKeys() }
func (s *generationStore) Get(obj any) (any, bool, error)         { return s.i.indexer.Get(obj) }
func (s *generationStore) GetByKey(key string) (any, bool, error) { return s.i.indexer.GetByKey(key) }

// apply drops an object of another namespace and transforms the others. An
// object of a list (listed) that the cache holds at the same version is
// kept as cached instead; a watched change is always a new version.
func (s *generationStore) apply(obj any, listed bool) (any, error) {
	if obj == dropped {
		return dropped, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if !s.keep(m.GetNamespace()) {
		return dropped, nil
	}
	if listed {
		if held := s.held(m); held != nil {
			return held, nil
		}
	}
	return s.i.transform(obj)
}

// held returns the cached object if the cache holds this version of it
// already. A scope that widens lists every namespace again; the objects of
// the namespaces it held are kept as cached rather than transformed into a
// second copy of each, which the cache would hold beside the first until
// the list ends.
func (s *generationStore) held(m metav1.Object) any {
	rv := m.GetResourceVersion()
	if rv == "" {
		return nil
	}
	o, ok, err := s.i.indexer.GetByKey(cache.MetaObjectToName(m).String())
	if err != nil || !ok {
		return nil
	}
	if c, err := meta.Accessor(o); err != nil || c.GetResourceVersion() != rv {
		return nil
	}
	return o
}

func (s *generationStore) Add(obj any) error { return s.Update(obj) }

func (s *generationStore) Update(obj any) error {
	o, err := s.apply(obj, false)
	if err != nil || o == dropped {
		return err
	}
	old, exists, err := s.i.indexer.Get(o)
	if err != nil {
		return err
	}
	if err := s.i.indexer.Update(o); err != nil {
		return err
	}
	if exists {
		s.i.eachHandler(func(h cache.ResourceEventHandler) { h.OnUpdate(old, o) })
	} else {
		s.i.eachHandler(func(h cache.ResourceEventHandler) { h.OnAdd(o, false) })
	}
	return nil
}

func (s *generationStore) Delete(obj any) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if !s.keep(m.GetNamespace()) {
		return nil
	}
	old, exists, err := s.i.indexer.Get(obj)
	if err != nil || !exists {
		return err
	}
	if err := s.i.indexer.Delete(old); err != nil {
		return err
	}
	s.i.eachHandler(func(h cache.ResourceEventHandler) { h.OnDelete(old) })
	return nil
}

// Replace makes the cache exactly the listed objects of the generation's
// namespaces, and marks the generation synced.
func (s *generationStore) Replace(list []any, resourceVersion string) error {
	s.mu.Lock()
	streamed := s.streamed
	s.streamed = nil
	s.mu.Unlock()
	kept := make([]any, 0, len(list))
	for _, obj := range list {
		if _, ok := streamed[obj]; ok {
			kept = append(kept, obj)
			continue
		}
		o, err := s.apply(obj, true)
		if err != nil {
			return err
		}
		if o != dropped {
			kept = append(kept, o)
		}
	}
	s.i.mu.Lock()
	handled := len(s.i.handlers) > 0
	s.i.mu.Unlock()
	// With handlers, what the cache held is compared with the list.
	var before map[string]any
	if handled {
		before = map[string]any{}
		for _, o := range s.i.indexer.List() {
			if k, err := cache.MetaNamespaceKeyFunc(o); err == nil {
				before[k] = o
			}
		}
	}
	if err := s.i.indexer.Replace(kept, resourceVersion); err != nil {
		return err
	}
	if handled {
		for _, o := range kept {
			k, err := cache.MetaNamespaceKeyFunc(o)
			if err != nil {
				continue
			}
			if old, ok := before[k]; ok {
				delete(before, k)
				s.i.eachHandler(func(h cache.ResourceEventHandler) { h.OnUpdate(old, o) })
			} else {
				s.i.eachHandler(func(h cache.ResourceEventHandler) { h.OnAdd(o, true) })
			}
		}
		for _, old := range before {
			s.i.eachHandler(func(h cache.ResourceEventHandler) { h.OnDelete(old) })
		}
	}
	s.i.markSynced(s.gen)
	return nil
}

// Resync does nothing: a Scope's informers re-deliver nothing on a period.
func (s *generationStore) Resync() error { return nil }
