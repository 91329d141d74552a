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

package writes

import "sync"

// Background runs API writes off the loop goroutine. A writer hands it a
// batch to run; when a write finishes, the batch leaves a function that
// applies its outcome to the loop's state, and the loop runs those functions
// at the start of its next loop (Apply). Loop state is thus only ever touched
// by the loop. The zero value is ready to use; it is not copied.
type Background struct {
	running sync.WaitGroup
	mu      sync.Mutex
	pending []func()
}

// Run runs batch in a new goroutine.
func (b *Background) Run(batch func()) {
	b.running.Add(1)
	go func() {
		defer b.running.Done()
		batch()
	}()
}

// Finished queues apply for the loop goroutine. Safe from any goroutine.
func (b *Background) Finished(apply func()) {
	b.mu.Lock()
	b.pending = append(b.pending, apply)
	b.mu.Unlock()
}

// Apply runs the queued functions, in the order they were queued. Loop
// goroutine only.
func (b *Background) Apply() {
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	b.mu.Unlock()
	for _, f := range pending {
		f()
	}
}

// Wait blocks until every batch started so far has returned.
func (b *Background) Wait() { b.running.Wait() }

// Parallel runs f(0..n-1) on workers goroutines (at least one) and returns
// when every call has returned.
func Parallel(workers, n int, f func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(min(workers, n), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
