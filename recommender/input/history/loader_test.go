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

package history

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openvpa/openvpa/pkg/testpoll"
)

// scriptedFetcher fails a namespace's first failures fetches, then serves it.
type scriptedFetcher struct {
	mu       sync.Mutex
	failures map[string]int
	calls    map[string]int
	done     chan string
}

func (f *scriptedFetcher) Fetch(_ context.Context, ns string) (*Namespace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[ns]++
	defer func() { f.done <- ns }()
	if f.calls[ns] <= f.failures[ns] {
		return nil, errors.New("connection refused")
	}
	return &Namespace{Name: ns, Pods: map[string]*Pod{}}, nil
}

func TestLoaderRetriesWithBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	f := &scriptedFetcher{failures: map[string]int{"shop": 3}, calls: map[string]int{}, done: make(chan string, 10)}
	l := NewLoader(f, LoaderOptions{Workers: 1, InitialBackoff: 10 * time.Second, MaxBackoff: 25 * time.Second, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Run(ctx)
	l.Want("shop")
	l.Want("shop") // asking again while queued is a no-op

	var waits []time.Duration
	for attempt := 1; attempt <= 3; attempt++ {
		<-f.done
		var s Status
		testpoll.Until(t, 10*time.Second, "the failure to be recorded", func() bool { s = l.Status("shop"); return s.Attempts == attempt })
		if s.Err == nil || !s.Known {
			t.Fatalf("attempt %d: status %+v, want the error", attempt, s)
		}
		if got := l.Take(); len(got) != 0 {
			t.Fatalf("attempt %d: took %d histories after a failure", attempt, len(got))
		}
		waits = append(waits, s.NextAttempt.Sub(clk.Now()))
		testpoll.Until(t, 10*time.Second, "the retry timer", func() bool { return clk.HasWaiters() })
		clk.Step(s.NextAttempt.Sub(clk.Now()))
	}
	<-f.done
	testpoll.Until(t, 10*time.Second, "the history", func() bool { return l.Status("shop").Err == nil })
	got := l.Take()
	if len(got) != 1 || got[0].Name != "shop" {
		t.Fatalf("took %v, want shop's history", got)
	}
	if s := l.Status("shop"); s.Known {
		t.Errorf("status after Take = %+v, want forgotten", s)
	}
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second} {
		if w := waits[i]; w < want*9/10 || w > want*11/10 {
			t.Errorf("wait after failure %d = %v, want %v ±10%%", i+1, w, want)
		}
	}
	if f.calls["shop"] != 4 {
		t.Errorf("fetches = %d, want 4", f.calls["shop"])
	}
}

func TestLoaderRefetchesAfterTake(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	f := &scriptedFetcher{failures: map[string]int{}, calls: map[string]int{}, done: make(chan string, 10)}
	l := NewLoader(f, LoaderOptions{Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Run(ctx)
	l.Want("a")
	l.Want("b")
	<-f.done
	<-f.done
	var got []*Namespace
	testpoll.Until(t, 10*time.Second, "both histories", func() bool { got = append(got, l.Take()...); return len(got) == 2 })
	l.Want("a")
	<-f.done
	testpoll.Until(t, 10*time.Second, "a again", func() bool { return len(l.Take()) == 1 })
	if f.calls["a"] != 2 || f.calls["b"] != 1 {
		t.Errorf("calls = %v, want a twice and b once", f.calls)
	}
}
