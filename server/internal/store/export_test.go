package store

// DB exposes the statements' runner to the external tests.
func (q *Queries) DB() DBTX { return q.db }

// Stale exposes stale to the external tests.
var Stale = stale
