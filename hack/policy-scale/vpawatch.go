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

package main

import (
	"context"
	"errors"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
)

// vpaWatch follows the managed VPAs of one policy through a watch: how many
// exist, when the count first reached a target, and how many times they were
// added, changed and deleted. It reads only the API server, so it sees every
// write, whoever made it.
type vpaWatch struct {
	namespaces map[string]bool
	synced     func() bool

	mu      sync.Mutex
	present map[string]string // namespace/name to resource version
	events  eventCounts
	// first is when the first VPA was added; reached when the count first
	// reached want; empty when it first fell to zero after a delete.
	first, reached, empty time.Time
	want                  int
}

// eventCounts are the watch events seen; updates count only changes of
// resource version.
type eventCounts struct {
	adds, updates, deletes int
}

func (e eventCounts) sub(o eventCounts) eventCounts {
	return eventCounts{adds: e.adds - o.adds, updates: e.updates - o.updates, deletes: e.deletes - o.deletes}
}

// watchManaged starts a watch of the VPAs with labelSelector in namespaces
// (all namespaces when there are several); it stops with ctx.
func watchManaged(ctx context.Context, vpas versioned.Interface, namespaces []string, labelSelector string) (*vpaWatch, error) {
	w := &vpaWatch{namespaces: map[string]bool{}, present: map[string]string{}}
	for _, ns := range namespaces {
		w.namespaces[ns] = true
	}
	watched := ""
	if len(namespaces) == 1 {
		watched = namespaces[0]
	}
	api := vpas.AutoscalingV1().VerticalPodAutoscalers(watched)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = labelSelector
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = labelSelector
			return api.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &vpav1.VerticalPodAutoscaler{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.added,
		UpdateFunc: func(_, o any) { w.updated(o) },
		DeleteFunc: w.deleted,
	}); err != nil {
		return nil, err
	}
	w.synced = inf.HasSynced
	go inf.RunWithContext(ctx)
	return w, nil
}

// waitSynced waits for the watch's first list.
func (w *vpaWatch) waitSynced(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), w.synced) {
		return errors.New("the VPA watch did not sync")
	}
	return nil
}

func (w *vpaWatch) key(o any) (string, string, bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	v, ok := o.(*vpav1.VerticalPodAutoscaler)
	if !ok || !w.namespaces[v.Namespace] {
		return "", "", false
	}
	return v.Namespace + "/" + v.Name, v.ResourceVersion, true
}

func (w *vpaWatch) added(o any) {
	k, rv, ok := w.key(o)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.events.adds++
	w.present[k] = rv
	if w.first.IsZero() {
		w.first = now
	}
	if w.want > 0 && w.reached.IsZero() && len(w.present) >= w.want {
		w.reached = now
	}
}

func (w *vpaWatch) updated(o any) {
	k, rv, ok := w.key(o)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.present[k] != rv {
		w.events.updates++
	}
	w.present[k] = rv
}

func (w *vpaWatch) deleted(o any) {
	k, _, ok := w.key(o)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events.deletes++
	delete(w.present, k)
	if len(w.present) == 0 && w.empty.IsZero() {
		w.empty = time.Now()
	}
}

// expect sets the count whose first arrival reached reports, and forgets
// earlier times.
func (w *vpaWatch) expect(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want, w.first, w.reached, w.empty = n, time.Time{}, time.Time{}, time.Time{}
}

// state returns the count, the event counts and the times so far.
func (w *vpaWatch) state() (n int, ev eventCounts, first, reached, empty time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.present), w.events, w.first, w.reached, w.empty
}

// versions returns a copy of the resource versions seen.
func (w *vpaWatch) versions() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.present))
	for k, v := range w.present {
		out[k] = v
	}
	return out
}
