// Package chaos runs Coffer under faults and checks that no money is lost or doubled: `make
// chaos` (TestChaos) starts two API and two worker replicas of `coffer serve` on one private
// PostgreSQL cluster and a geth --dev chain, drives deposits and withdrawals through the public
// interfaces, kills replicas, restarts PostgreSQL and breaks the operators' webhook receiver on
// a schedule derived from a seed, then reads the chain and the database and checks the
// invariants. It writes a plain-text report with the figures of the run.
//
// One file per concept: settings.go (the environment), schedule.go (the faults a seed
// gives), stack.go and process.go (the system under test), receiver.go (the operators' webhook
// endpoint), client.go (the public API behind a two-replica balancer, every call recorded),
// load.go (the load generators and what they did), faults.go (the injector), monitor.go (scan
// cursor and job recovery after kills), recovery.go (the recovery figures and their targets),
// drain.go (waiting for the system to settle), invariants.go (the checks), logs.go (the causes of
// 500s the replicas logged), report.go (the report), run.go (one seed from start to report),
// regressions.go (kept seeds).
package chaos
