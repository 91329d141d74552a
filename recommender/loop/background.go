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
