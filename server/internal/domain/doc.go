// Package domain is Coffer's domain vocabulary: the records the service keeps (deposits,
// withdrawals, sessions, chain transactions, sweeps, webhook events, operators, funds, reorgs),
// their typed statuses, and who may see and who did what (Scope, Actor). It imports nothing of
// Coffer's, so every layer can share it: the store reads and writes these types, the domain
// packages apply their transition tables to them, and the transports map them to and from the
// wire. The transition tables themselves live with the domain package that owns each state
// machine (withdrawal, deposit, session, chaintx, webhook).
//
// It plays the part River's rivertype plays for River.
package domain
