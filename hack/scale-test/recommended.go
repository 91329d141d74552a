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
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
)

// recommendedWatch follows the VPAs of some namespaces through a watch and
// records when every one of them first has a recommendation. It reads only
// the API, so it measures any recommender the same way, upstream's too, and
// counts across replicas.
type recommendedWatch struct {
	want       int
	start      time.Time
	namespaces map[string]bool

	mu  sync.Mutex
	has map[string]bool
	at  time.Duration
}

// watchRecommended starts the watch; it stops with ctx. The clock starts now.
func watchRecommended(ctx context.Context, vpas versioned.Interface, namespaces []string, want int) (*recommendedWatch, error) {
	w := &recommendedWatch{want: want, start: time.Now(), has: map[string]bool{}, namespaces: map[string]bool{}}
	for _, ns := range namespaces {
		w.namespaces[ns] = true
	}
	watched := "" // several namespaces: watch all, count ours
	if len(namespaces) == 1 {
		watched = namespaces[0]
	}
	api := vpas.AutoscalingV1().VerticalPodAutoscalers(watched)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return api.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &vpav1.VerticalPodAutoscaler{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, o any) { w.observe(o) },
	}); err != nil {
		return nil, err
	}
	go inf.RunWithContext(ctx)
	return w, nil
}

func (w *recommendedWatch) observe(o any) {
	v, ok := o.(*vpav1.VerticalPodAutoscaler)
	if !ok || !w.namespaces[v.Namespace] || v.Status.Recommendation == nil || len(v.Status.Recommendation.ContainerRecommendations) == 0 {
		return
	}
	key := v.Namespace + "/" + v.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.has[key] {
		return
	}
	w.has[key] = true
	if len(w.has) == w.want {
		w.at = time.Since(w.start)
		logf("every VPA has its first recommendation %s after the start (seen by a watch)", w.at.Round(time.Second))
	}
}

// allRecommended returns the time from the start until every VPA had a
// recommendation, 0 while some still have none.
func (w *recommendedWatch) allRecommended() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}
