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
package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/openvpa/openvpa/e2e/framework"
)

// probeInterval is the time between two probe pods.
const probeInterval = 200 * time.Millisecond

// probeResult is one dry-run pod creation.
type probeResult struct {
	at      time.Time
	took    time.Duration
	patched bool
	err     error
}

// prober creates a dry-run pod of a Deployment with a recommendation every
// probeInterval, as its ReplicaSet would, and records whether the admission
// chain gave it the recommendation (the vpaUpdates annotation) and how long
// the creation took.
type prober struct {
	client     kubernetes.Interface
	ns, deploy string

	mu      sync.Mutex
	results []probeResult
}

func (p *prober) run(ctx context.Context) {
	for ctx.Err() == nil {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		pod, err := framework.DryRunPodWith(rctx, p.client, p.ns, p.deploy)
		cancel()
		if ctx.Err() != nil {
			return
		}
		r := probeResult{at: start, took: time.Since(start), err: err}
		if err == nil {
			r.patched = pod.Annotations["vpaUpdates"] != ""
		}
		p.mu.Lock()
		p.results = append(p.results, r)
		p.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(probeInterval):
		}
	}
}

// window sums up the probes started in [from, to].
type window struct {
	created, unpatched, failed int
	slowest                    time.Duration
	lastErr                    error
}

func (w window) String() string {
	return fmt.Sprintf("%d pods created, %d unpatched, %d creations failed, slowest %v", w.created, w.unpatched, w.failed, w.slowest.Round(time.Millisecond))
}

func (p *prober) window(from, to time.Time) window {
	p.mu.Lock()
	defer p.mu.Unlock()
	var w window
	for _, r := range p.results {
		if r.at.Before(from) || r.at.After(to) {
			continue
		}
		w.slowest = max(w.slowest, r.took)
		switch {
		case r.err != nil:
			w.failed++
			w.lastErr = r.err
		case r.patched:
			w.created++
		default:
			w.created++
			w.unpatched++
		}
	}
	return w
}
