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

package loop

import (
	"context"

	"github.com/openvpa/openvpa/recommender/input/history"
)

// HistorySource loads namespaces' past usage in the background
// (history.Loader).
type HistorySource interface {
	// Want asks for a namespace's history.
	Want(namespace string)
	// Take returns the histories that arrived since the last call.
	Take() []*history.Namespace
	// Status is where a namespace's history stands.
	Status(namespace string) history.Status
}

// applyHistory feeds the histories that arrived into the VPAs that wait for
// them (cluster.State.FeedHistory: after the pods are loaded, before their
// usage), and asks for the namespaces of the VPAs that still wait (new VPAs
// included, so a VPA created after the start gets its history too).
func (r *Recommender) applyHistory(ctx context.Context) {
	now := r.deps.Clock.Now()
	for _, h := range r.deps.History.Take() {
		r.state.FeedHistory(ctx, h, now)
	}
	r.wantHistory()
}

// wantHistory asks for the history of every namespace with a VPA that waits
// for it, and returns those namespaces.
func (r *Recommender) wantHistory() []string {
	nss := r.state.HistoryWanted()
	for _, ns := range nss {
		r.deps.History.Want(ns)
	}
	return nss
}

// WantHistory loads the VPAs and asks for the history of every namespace
// that has one, before the first loop, so that the first statuses can carry
// it. It returns the namespaces asked for.
func (r *Recommender) WantHistory(ctx context.Context) []string {
	if r.deps.History == nil {
		return nil
	}
	r.loadVPAs(ctx)
	return r.wantHistory()
}
