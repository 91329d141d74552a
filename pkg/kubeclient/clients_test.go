package kubeclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// seen is one request the fake API server received.
type seen struct {
	method, path, contentType string
	body                      runtime.Object // decoded, when the body is an object
	raw                       []byte
}

// apiServer records requests and answers each with status and a JSON body.
type apiServer struct {
	t      *testing.T
	mu     sync.Mutex
	seen   []seen
	status int
	reply  any
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := seen{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), raw: raw}
	if len(raw) > 0 && r.Method != http.MethodPatch {
		obj, _, err := serializer.NewCodecFactory(builtinScheme).UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil {
			s.t.Errorf("%s %s: undecodable body: %v", r.Method, r.URL.Path, err)
		}
		req.body = obj
	}
	s.mu.Lock()
	s.seen = append(s.seen, req)
	status, reply := s.status, s.reply
	s.mu.Unlock()
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(reply)
}

func (s *apiServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

func newAPIServer(t *testing.T, status int, reply any) (*apiServer, Clients) {
	t.Helper()
	s := &apiServer{t: t, status: status, reply: reply}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := NewClients(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

const protobuf = "application/vnd.kubernetes.protobuf"

func TestClientsRequests(t *testing.T) {
	ctx := context.Background()
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	tooMany := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Reason: metav1.StatusReasonTooManyRequests, Code: http.StatusTooManyRequests, Message: "Cannot evict pod as it would violate the pod's disruption budget."}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Generation: 3}}
	event := &corev1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p.1"}, Reason: "R"}
	config := &admissionregistrationv1.MutatingWebhookConfiguration{TypeMeta: metav1.TypeMeta{Kind: "MutatingWebhookConfiguration", APIVersion: "admissionregistration.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}
	tests := map[string]struct {
		status      int
		reply       any
		call        func(Clients) error
		method      string
		path        string
		contentType string
		bodyKind    string // apiVersion/kind of the request body
		check       func(t *testing.T, err error)
	}{
		"an eviction is posted to the pod's eviction subresource": {
			reply: &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated},
			status: http.StatusCreated,
			call:   func(c Clients) error { return c.Evict(ctx, eviction) },
			method: http.MethodPost, path: "/api/v1/namespaces/ns/pods/p/eviction", contentType: protobuf, bodyKind: "policy/v1, Kind=Eviction",
		},
		"a refused eviction is TooManyRequests": {
			reply: tooMany, status: http.StatusTooManyRequests,
			call:   func(c Clients) error { return c.Evict(ctx, eviction) },
			method: http.MethodPost, path: "/api/v1/namespaces/ns/pods/p/eviction", contentType: protobuf, bodyKind: "policy/v1, Kind=Eviction",
			check: func(t *testing.T, err error) {
				if !apierrors.IsTooManyRequests(err) {
					t.Errorf("error %v, want TooManyRequests", err)
				}
			},
		},
		"a resize patches the resize subresource": {
			reply: pod,
			call: func(c Clients) error {
				p, err := c.Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{FieldManager: "m"}, "resize")
				if err == nil && p.Generation != 3 {
					t.Errorf("patched pod %+v, want the reply decoded", p)
				}
				return err
			},
			method: http.MethodPatch, path: "/api/v1/namespaces/ns/pods/p/resize", contentType: string(types.StrategicMergePatchType),
		},
		"events are written in their own namespace": {
			reply: event, status: http.StatusCreated,
			call: func(c Clients) error {
				_, err := EventSink{Clients: c}.Create(event)
				return err
			},
			method: http.MethodPost, path: "/api/v1/namespaces/team/events", contentType: protobuf, bodyKind: "/v1, Kind=Event",
		},
		"an event's count is patched": {
			reply: event,
			call: func(c Clients) error {
				_, err := EventSink{Clients: c}.Patch(event, []byte(`{"count":2}`))
				return err
			},
			method: http.MethodPatch, path: "/api/v1/namespaces/team/events/p.1", contentType: string(types.StrategicMergePatchType),
		},
		"webhook configurations are cluster-scoped": {
			reply: config,
			call: func(c Clients) error {
				_, err := c.MutatingWebhookConfigurations().Get(ctx, "cfg", metav1.GetOptions{})
				return err
			},
			method: http.MethodGet, path: "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/cfg",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, c := newAPIServer(t, tc.status, tc.reply)
			err := tc.call(c)
			if tc.check != nil {
				tc.check(t, err)
			} else if err != nil {
				t.Fatal(err)
			}
			reqs := s.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1: %+v", len(reqs), reqs)
			}
			r := reqs[0]
			if r.method != tc.method || r.path != tc.path {
				t.Errorf("request %s %s, want %s %s", r.method, r.path, tc.method, tc.path)
			}
			if tc.contentType != "" && r.contentType != tc.contentType {
				t.Errorf("content type %q, want %q", r.contentType, tc.contentType)
			}
			if tc.bodyKind != "" {
				if r.body == nil {
					t.Fatalf("no object in the body %q", r.raw)
				}
				if got := r.body.GetObjectKind().GroupVersionKind().String(); got != tc.bodyKind {
					t.Errorf("body kind %q, want %q", got, tc.bodyKind)
				}
			}
		})
	}
}

func TestEventRecorderNamesVPAsAndPods(t *testing.T) {
	s, c := newAPIServer(t, http.StatusCreated, &corev1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recorder, stop := NewEventRecorder(ctx, c, "vpa-test")
	defer stop()
	vpa := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "u1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-1", UID: "u2"}}
	recorder.Event(vpa, corev1.EventTypeNormal, "EvictedPod", "evicted web-1")
	recorder.Event(pod, corev1.EventTypeWarning, "EvictedByVPA", "evicted")

	want := map[string]string{"VerticalPodAutoscaler": "autoscaling.k8s.io/v1", "Pod": "v1"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]string{}
		for _, r := range s.requests() {
			ev, ok := r.body.(*corev1.Event)
			if !ok || r.path != "/api/v1/namespaces/team/events" {
				continue
			}
			if ev.Source.Component != "vpa-test" {
				t.Errorf("event source %q, want vpa-test", ev.Source.Component)
			}
			got[ev.InvolvedObject.Kind] = ev.InvolvedObject.APIVersion
		}
		if len(got) == len(want) {
			for k, v := range want {
				if got[k] != v {
					t.Errorf("event about %s has apiVersion %q, want %q", k, got[k], v)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events written about %v, want %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
