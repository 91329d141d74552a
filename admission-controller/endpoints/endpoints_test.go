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

package endpoints

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const (
	ns       = "vpa"
	service  = "vpa-webhook"
	pod      = "vpa-admission-controller-abc"
	interval = 500 * time.Millisecond
	margin   = time.Second
	fallback = 5 * time.Second
)

type endpoint struct {
	pod   string
	ready *bool
}

func slice(name, svc string, eps ...endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{"10.0.0.1"},
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: e.pod},
		})
	}
	return s
}

// harness runs a Waiter on a fake clientset and a fake clock.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *testingclock.FakeClock
	done   chan error
	cancel context.CancelFunc
}

func start(t *testing.T, o Options, objects ...runtime.Object) *harness {
	t.Helper()
	h := newHarness(t, objects...)
	h.run(o)
	return h
}

func newHarness(t *testing.T, objects ...runtime.Object) *harness {
	return &harness{t: t, client: fake.NewClientset(objects...), clock: testingclock.NewFakeClock(time.Now()), done: make(chan error, 1)}
}

// run starts the Waiter.
func (h *harness) run(o Options) {
	t := h.t
	o.Clock = h.clock
	o.Interval, o.Margin, o.Fallback = interval, margin, fallback
	w := NewWaiter(fakeLister(h.client), o)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	t.Cleanup(cancel)
	go func() { h.done <- w.Wait(ctx) }()
}

func defaults() Options { return Options{Namespace: ns, Service: service, Pod: pod} }

// waiting waits until the Waiter waits on the clock, and fails if it
// returned.
func (h *harness) waiting() {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !h.clock.HasWaiters() {
		select {
		case err := <-h.done:
			h.t.Fatalf("Wait() = %v, want it still waiting", err)
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatal("the Waiter did not wait on the clock within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// step advances the clock by d once the Waiter waits on it.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.waiting()
	h.clock.Step(d)
}

// returned fails unless Wait returns want within 5s.
func (h *harness) returned(want error) {
	h.t.Helper()
	select {
	case err := <-h.done:
		if !errors.Is(err, want) {
			h.t.Errorf("Wait() = %v, want %v", err, want)
		}
	case <-time.After(5 * time.Second):
		h.t.Fatal("Wait did not return within 5s")
	}
}

func (h *harness) update(s *discoveryv1.EndpointSlice) {
	h.t.Helper()
	if _, err := h.client.DiscoveryV1().EndpointSlices(ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func TestWaitWhileReady(t *testing.T) {
	tests := map[string]struct {
		// leave takes the pod out of rotation.
		leave func(h *harness)
	}{
		"the endpoint turns not ready": {leave: func(h *harness) {
			h.update(slice("a", service, endpoint{pod, ptr.To(false)}, endpoint{"other", ptr.To(true)}))
		}},
		"the endpoint is removed": {leave: func(h *harness) {
			h.update(slice("a", service, endpoint{"other", ptr.To(true)}))
		}},
		"the slice is deleted": {leave: func(h *harness) {
			if err := h.client.DiscoveryV1().EndpointSlices(ns).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
				h.t.Fatal(err)
			}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := start(t, defaults(),
				slice("a", service, endpoint{pod, ptr.To(true)}, endpoint{"other", ptr.To(true)}),
				// Another Service's slice listing the pod not ready is
				// not looked at.
				slice("b", "another", endpoint{pod, ptr.To(false)}))
			for range 10 {
				h.step(interval)
			}
			h.waiting()
			tc.leave(h)
			h.step(interval) // the next list sees it gone
			h.step(margin - time.Millisecond)
			h.step(time.Millisecond)
			h.returned(nil)
		})
	}
}

func TestWaitReturnsAtOnce(t *testing.T) {
	tests := map[string]struct {
		o       Options
		objects []runtime.Object
		margin  bool
	}{
		"no Service":             {o: defaults(), objects: []runtime.Object{slice("b", "another", endpoint{pod, ptr.To(true)})}},
		"not behind the Service": {o: defaults(), objects: []runtime.Object{slice("a", service, endpoint{"other", ptr.To(true)})}},
		"no Service name (registered by URL)": {o: Options{Namespace: ns, Pod: pod},
			objects: []runtime.Object{slice("a", service, endpoint{pod, ptr.To(true)})}},
		"no pod name": {o: Options{Namespace: ns, Service: service},
			objects: []runtime.Object{slice("a", service, endpoint{pod, ptr.To(true)})}},
		"already not ready: only the margin": {o: defaults(), margin: true,
			objects: []runtime.Object{slice("a", service, endpoint{pod, ptr.To(false)})}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := start(t, tc.o, tc.objects...)
			if tc.margin {
				h.step(margin)
			}
			h.returned(nil)
		})
	}
}

func TestUnknownReadinessIsReady(t *testing.T) {
	h := start(t, defaults(), slice("a", service, endpoint{pod, nil}))
	h.step(interval)
	h.step(interval)
	h.waiting()
	h.cancel()
	h.returned(context.Canceled)
}

func TestListErrorFallsBackToAFixedDelay(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, "", errors.New("no RBAC"))
	tests := map[string]struct {
		// ready lists the pod ready before the lists fail.
		ready bool
		// cancel ends the context (the runtime's bound) during the delay.
		cancel bool
	}{
		"the first list fails":            {},
		"a list fails while ready":        {ready: true},
		"the bound passes before the end": {cancel: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, slice("a", service, endpoint{pod, ptr.To(true)}))
			var fail atomic.Bool
			fail.Store(!tc.ready)
			h.client.PrependReactor("list", "endpointslices", func(clienttesting.Action) (bool, runtime.Object, error) {
				if fail.Load() {
					return true, nil, forbidden
				}
				return false, nil, nil
			})
			h.run(defaults())
			if tc.ready {
				h.waiting()
				fail.Store(true)
				h.step(interval)
			}
			if tc.cancel {
				h.step(fallback / 2)
				h.waiting()
				h.cancel()
				h.returned(context.Canceled)
				return
			}
			h.step(fallback - time.Millisecond)
			h.step(time.Millisecond)
			h.returned(nil)
		})
	}
}

func TestNewListerListsTheServicesSlices(t *testing.T) {
	var gotPath, gotSelector string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotSelector = r.URL.Path, r.URL.Query().Get("labelSelector")
		w.Header().Set("Content-Type", "application/json")
		list := discoveryv1.EndpointSliceList{
			TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSliceList"},
			Items:    []discoveryv1.EndpointSlice{*slice("a", service, endpoint{pod, ptr.To(true)})},
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()
	l, err := NewLister(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	list, err := l.ListEndpointSlices(context.Background(), ns, discoveryv1.LabelServiceName+"="+service)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/apis/discovery.k8s.io/v1/namespaces/vpa/endpointslices"; gotPath != want {
		t.Errorf("path %q, want %q", gotPath, want)
	}
	if want := "kubernetes.io/service-name=vpa-webhook"; gotSelector != want {
		t.Errorf("labelSelector %q, want %q", gotSelector, want)
	}
	if len(list.Items) != 1 || list.Items[0].Endpoints[0].TargetRef.Name != pod {
		t.Errorf("list %+v, want the one slice", list.Items)
	}
}

func TestOthers(t *testing.T) {
	terminating := func(s *discoveryv1.EndpointSlice, i int) *discoveryv1.EndpointSlice {
		s.Endpoints[i].Conditions.Terminating = ptr.To(true)
		return s
	}
	tests := []struct {
		name   string
		o      Options
		slices []runtime.Object
		want   bool
	}{
		{"only this pod", Options{Namespace: ns, Service: service, Pod: pod},
			[]runtime.Object{slice("a", service, endpoint{pod, ptr.To(false)})}, false},
		{"no slice at all", Options{Namespace: ns, Service: service, Pod: pod}, nil, false},
		{"a ready replica", Options{Namespace: ns, Service: service, Pod: pod},
			[]runtime.Object{slice("a", service, endpoint{pod, ptr.To(false)}, endpoint{"other", ptr.To(true)})}, true},
		{"a starting replica, not ready yet", Options{Namespace: ns, Service: service, Pod: pod},
			[]runtime.Object{slice("a", service, endpoint{pod, ptr.To(false)}), slice("b", service, endpoint{"new", ptr.To(false)})}, true},
		{"the other replica terminates too", Options{Namespace: ns, Service: service, Pod: pod},
			[]runtime.Object{terminating(slice("a", service, endpoint{pod, ptr.To(false)}, endpoint{"other", ptr.To(false)}), 1)}, false},
		{"another Service's pod", Options{Namespace: ns, Service: service, Pod: pod},
			[]runtime.Object{slice("a", "unrelated", endpoint{"other", ptr.To(true)})}, false},
		{"not in a pod", Options{Namespace: ns, Service: service}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.slices...)
			w := NewWaiter(fakeLister(client), tc.o)
			got, err := w.Others(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Others() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOthersListError(t *testing.T) {
	w := NewWaiter(ListFunc(func(context.Context, string, string) (*discoveryv1.EndpointSliceList, error) {
		return nil, errors.New("forbidden")
	}), Options{Namespace: ns, Service: service, Pod: pod})
	got, err := w.Others(context.Background())
	if err == nil || !got {
		t.Errorf("Others() = %v, %v; want true and the error, so that nothing is removed", got, err)
	}
}

// fakeLister lists the EndpointSlices of a fake clientset.
func fakeLister(client *fake.Clientset) Lister {
	return ListFunc(func(ctx context.Context, namespace, selector string) (*discoveryv1.EndpointSliceList, error) {
		return client.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	})
}
