package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The faults injected.
const (
	// KillWorker kills a worker replica with SIGKILL and starts it again after Fault.Down.
	KillWorker Kind = "kill-worker"
	// KillAPI kills an API replica with SIGKILL and starts it again after Fault.Down.
	KillAPI Kind = "kill-api"
	// RestartPostgres stops PostgreSQL (Fault.Target: "fast" shutdown, or "immediate", a crash
	// needing recovery) and starts it again on the same data and port after Fault.Down.
	RestartPostgres Kind = "restart-postgres"
	// ReceiverFail makes the operators' webhook receiver fail every request for Fault.Down
	// (Fault.Target: "http-500", "error-1" or "not-json").
	ReceiverFail Kind = "receiver-fail"
	// ReceiverHang makes the receiver hold every request until Fault.Down has passed (longer
	// than the 15 s a delivery waits: the first ones time out).
	ReceiverHang Kind = "receiver-hang"
)

// Kinds are every fault kind, in report order.
func Kinds() []Kind { return []Kind{KillWorker, KillAPI, RestartPostgres, ReceiverFail, ReceiverHang} }

// Fault is one planned fault.
type Fault struct {
	// At is when it starts, after the load started (later if the previous fault is not over).
	At   time.Duration
	Kind Kind
	// Target is the replica (worker-1, api-2), the PostgreSQL shutdown mode or the receiver's
	// failure.
	Target string
	// Down is how long the replica or PostgreSQL stays down, or the receiver misbehaves.
	Down time.Duration
}

func (f Fault) String() string {
	return fmt.Sprintf("+%-6s %-16s %-10s for %s", f.At.Round(time.Second), f.Kind, f.Target, f.Down.Round(100*time.Millisecond))
}

// Schedule timing: no fault in the first warmup of the load (operators, sessions and the first
// deposits settle), none in the last quiet stretch, and a gap after each fault's planned end.
const (
	warmup = 20 * time.Second
	quiet  = 15 * time.Second
	// recoverAllowance is what a restart is expected to take, for planning only.
	recoverAllowance = 5 * time.Second
)

// Schedule derives the faults of a run from its seed: faults one after the other (never two at
// once, so every effect is attributed to one fault), every kind once in each round, in an order
// and with targets and durations the seed picks. A load of 3 minutes or more gets every kind.
func Schedule(seed uint64, load time.Duration) []Fault {
	r := rand.New(rand.NewPCG(seed, 0x636f66666572)) // "coffer"
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	var out []Fault
	at := warmup
	var round []Kind
	for {
		if len(round) == 0 {
			round = append([]Kind(nil), Kinds()...)
			r.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		f := Fault{At: at, Kind: round[0]}
		switch f.Kind {
		case KillWorker:
			f.Target = fmt.Sprintf("worker-%d", 1+r.IntN(2))
			f.Down = between(2*time.Second, 12*time.Second)
		case KillAPI:
			f.Target = fmt.Sprintf("api-%d", 1+r.IntN(2))
			f.Down = between(2*time.Second, 8*time.Second)
		case RestartPostgres:
			f.Target = []string{"fast", "immediate"}[r.IntN(2)]
			f.Down = between(time.Second, 6*time.Second)
		case ReceiverFail:
			f.Target = []string{"http-500", "error-1", "not-json"}[r.IntN(3)]
			// Shorter than the 5 s before a delivery's second attempt, which then succeeds.
			f.Down = between(2*time.Second, 4*time.Second)
		case ReceiverHang:
			f.Target = "hold"
			// A delivery that arrives first times out after 15 s; its second attempt, 5 s later,
			// comes after the receiver is back.
			f.Down = between(16*time.Second, 18*time.Second)
		}
		end := at + f.Down + recoverAllowance
		if end > load-quiet {
			return out
		}
		out = append(out, f)
		round = round[1:]
		at = end + between(8*time.Second, 18*time.Second)
	}
}

// FormatSchedule prints a schedule, one fault a line.
func FormatSchedule(faults []Fault) string {
	var b strings.Builder
	for i, f := range faults {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, f)
	}
	return b.String()
}
