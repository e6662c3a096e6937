package webhook

import (
	"context"
	"sync"
	"time"
)

// batcher runs concurrent calls in batches, group-commit style: a call starts a batch at
// once when fewer than parallel batches are running, and otherwise waits and joins the next
// batch with every call that queued meanwhile. Alone, a call costs one round trip as before;
// under load, N delivery workers share round trips instead of each paying its own (this is
// what keeps the outbox near River's own job throughput). No timer is involved.
type batcher[In, Out any] struct {
	// run returns one output (or error) per input, in order; err fails the whole batch.
	run      func(ctx context.Context, in []In) ([]Out, []error, error)
	max      int
	parallel int
	timeout  time.Duration

	mu      sync.Mutex
	queue   []*call[In, Out]
	running int
}

type call[In, Out any] struct {
	in   In
	out  Out
	err  error
	done chan struct{}
}

// do queues in and waits for its result. The batch runs on its own context (bounded by
// timeout), so a caller that gives up does not fail the others; it gets ctx's error.
func (b *batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := &call[In, Out]{in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.running < b.parallel {
		b.running++
		// The loop outlives this caller and serves others: it keeps ctx's values, not its end.
		go b.loop(context.WithoutCancel(ctx))
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

func (b *batcher[In, Out]) loop(base context.Context) {
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.max)
		if n == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		batch := make([]*call[In, Out], n)
		copy(batch, b.queue)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()

		ins := make([]In, n)
		for i, c := range batch {
			ins[i] = c.in
		}
		ctx, cancel := context.WithTimeout(base, b.timeout)
		outs, errs, err := b.run(ctx, ins)
		cancel()
		for i, c := range batch {
			switch {
			case err != nil:
				c.err = err
			default:
				c.out = outs[i]
				if errs != nil {
					c.err = errs[i]
				}
			}
			close(c.done)
		}
	}
}
