package jobs

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// TxInserter enqueues jobs inside a caller's transaction (the outbox pattern): the job exists
// exactly when the state change that asked for it commits. *Client implements it.
type TxInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	// JobRetryTx makes a scheduled or retryable job available now (a running one is left alone).
	JobRetryTx(ctx context.Context, tx pgx.Tx, id int64) (*rivertype.JobRow, error)
}

// ErrUnbound is what inserting through an Inserter not yet bound to a River client returns.
var ErrUnbound = errors.New("jobs: the job inserter is not bound to a River client yet (Inserter.Bind)")

// Inserter is the services' way to River. The River client needs the services (its workers
// call them) and the services need to insert jobs, so the Inserter is made first, handed to
// every service's constructor, and bound once when the client exists: no service can be
// built without one, and there is a single place that binds it.
type Inserter struct {
	to atomic.Pointer[TxInserter]
}

// NewInserter returns an unbound inserter.
func NewInserter() *Inserter { return &Inserter{} }

// Bind makes c the client jobs are inserted with. It binds once: a second Bind is an error,
// so no service can be switched to another client behind the others' backs.
func (i *Inserter) Bind(c TxInserter) error {
	if c == nil {
		return errors.New("jobs: Bind of a nil River client")
	}
	if !i.to.CompareAndSwap(nil, &c) {
		return errors.New("jobs: the job inserter is already bound")
	}
	return nil
}

// Bound reports whether Bind has run.
func (i *Inserter) Bound() bool { return i.to.Load() != nil }

// InsertTx implements TxInserter through the bound client; ErrUnbound before Bind.
func (i *Inserter) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	c := i.to.Load()
	if c == nil {
		return nil, ErrUnbound
	}
	return (*c).InsertTx(ctx, tx, args, opts)
}

// JobRetryTx implements TxInserter through the bound client; ErrUnbound before Bind.
func (i *Inserter) JobRetryTx(ctx context.Context, tx pgx.Tx, id int64) (*rivertype.JobRow, error) {
	c := i.to.Load()
	if c == nil {
		return nil, ErrUnbound
	}
	return (*c).JobRetryTx(ctx, tx, id)
}
