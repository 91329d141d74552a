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

import "sync"

// background runs API writes off the loop goroutine. The loop hands a batch
// to run; when a write finishes, the batch leaves a function that applies its
// outcome to the loop's state, and the loop runs those functions at the start
// of its next RunOnce. Loop state is thus only ever touched by the loop.
type background struct {
	running sync.WaitGroup
	mu      sync.Mutex
	pending []func()
}

// run runs batch in a new goroutine.
func (b *background) run(batch func()) {
	b.running.Add(1)
	go func() {
		defer b.running.Done()
		batch()
	}()
}

// finished queues apply for the loop goroutine. Safe from any goroutine.
func (b *background) finished(apply func()) {
	b.mu.Lock()
	b.pending = append(b.pending, apply)
	b.mu.Unlock()
}

// apply runs the queued functions, in the order they were queued. Loop
// goroutine only.
func (b *background) apply() {
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	b.mu.Unlock()
	for _, f := range pending {
		f()
	}
}

// wait blocks until every batch started so far has returned.
func (b *background) wait() { b.running.Wait() }
