package chaos

import (
	"fmt"
	"sort"
	"time"
)

// Recovery targets after a worker is killed: the chain scan resumes within 15 s; payouts,
// sweeps and webhooks within 30 s. Enforced only with CHAOS_ENFORCE_RECOVERY=1 for now.
func recoveryTargets() []recoveryTarget {
	return []recoveryTarget{
		{"deposit.scan", "chain scan job", 15 * time.Second},
		{"deposit.settle", "sweeps (deposit.settle)", 30 * time.Second},
		{"withdrawal.payout", "payouts", 30 * time.Second},
		{"webhook_drain", "webhooks", 30 * time.Second},
	}
}

type recoveryTarget struct {
	Kind   string
	Label  string
	Target time.Duration
}

// scanTarget bounds the scan cursor's stall across a worker kill.
const scanTarget = 15 * time.Second

// RecoveryRow is the worst gap of one job kind after worker kills.
type RecoveryRow struct {
	Kind, Label string
	Target      time.Duration // 0: none
	Jobs        int           // jobs caught running on a killed worker
	Worst       *KilledJob
	WorstGap    time.Duration
	// WorstPickup is the longest kill → attempt by another worker.
	WorstPickup time.Duration
	Unrecovered int
}

// Missed reports a target exceeded (or a job never taken up again).
func (r RecoveryRow) Missed() bool {
	return r.Unrecovered > 0 || (r.Target > 0 && r.Jobs > 0 && r.WorstGap > r.Target)
}

// RecoveryTable is one row per job kind with a target (observed or not), then every other
// kind observed.
func RecoveryTable(killed []KilledJob, now time.Time) []RecoveryRow {
	rows := map[string]*RecoveryRow{}
	var order []string
	for _, t := range recoveryTargets() {
		rows[t.Kind] = &RecoveryRow{Kind: t.Kind, Label: t.Label, Target: t.Target}
		order = append(order, t.Kind)
	}
	var extra []string
	for i := range killed {
		k := &killed[i]
		r := rows[k.Kind]
		if r == nil {
			r = &RecoveryRow{Kind: k.Kind, Label: k.Kind}
			rows[k.Kind] = r
			extra = append(extra, k.Kind)
		}
		r.Jobs++
		if k.Recovered.IsZero() {
			r.Unrecovered++
		}
		if gap := k.Gap(now); gap > r.WorstGap {
			r.WorstGap, r.Worst = gap, k
		}
		pickup := now.Sub(k.KilledAt)
		if !k.PickedUp.IsZero() {
			pickup = k.PickedUp.Sub(k.KilledAt)
		}
		r.WorstPickup = max(r.WorstPickup, pickup)
	}
	sort.Strings(extra)
	var out []RecoveryRow
	for _, k := range append(order, extra...) {
		out = append(out, *rows[k])
	}
	return out
}

// StallSummary is the scan cursor's longest stall, overall and by what it overlapped.
type StallSummary struct {
	Worst           Stall
	WorstWorkerKill Stall // overlapping a worker kill: the target's figure
	ByFault         map[Kind]Stall
	Quiet           Stall // overlapping no fault
}

// stallCauses are the faults under way when a stall began (the cursor's last move, plus the
// time it normally takes to move again).
func stallCauses(st Stall, tl *Timeline) []Injected {
	return tl.Overlapping(st.From, st.From.Add(minStall), time.Second)
}

// SummarizeStalls attributes each stall to the faults under way when it began.
func SummarizeStalls(stalls []Stall, tl *Timeline) StallSummary {
	s := StallSummary{ByFault: map[Kind]Stall{}}
	for _, st := range stalls {
		if st.Length() > s.Worst.Length() {
			s.Worst = st
		}
		faults := stallCauses(st, tl)
		if len(faults) == 0 && st.Length() > s.Quiet.Length() {
			s.Quiet = st
		}
		for _, f := range faults {
			if st.Length() > s.ByFault[f.Kind].Length() {
				s.ByFault[f.Kind] = st
			}
			if f.Kind == KillWorker && st.Length() > s.WorstWorkerKill.Length() {
				s.WorstWorkerKill = st
			}
		}
	}
	return s
}

func checkRecovery(mon *Monitor, tl *Timeline, set Settings) *Check {
	c := &Check{Name: "recovery after a worker is killed is within its targets"}
	if !set.EnforceRecovery {
		c.Name += " (not enforced: CHAOS_ENFORCE_RECOVERY=0)"
	}
	miss := c.notef
	if set.EnforceRecovery {
		miss = c.failf
	}
	now := time.Now()
	for _, r := range RecoveryTable(mon.Killed(), now) {
		if !r.Missed() {
			continue
		}
		k := r.Worst
		miss("%s: worst gap %s > target %s (job %d, attempt started %s on %s, %s; %d of %d jobs never taken up again)", r.Label,
			r.WorstGap.Round(100*time.Millisecond), r.Target, k.ID, k.AttemptStart.Local().Format("15:04:05"), k.Worker,
			orNone(k.How), r.Unrecovered, r.Jobs)
	}
	st := SummarizeStalls(mon.Stalls(), tl)
	if st.WorstWorkerKill.Length() > scanTarget {
		miss("chain scan: the cursor stood still %s across a worker kill (%s → %s) > target %s",
			st.WorstWorkerKill.Length().Round(100*time.Millisecond), st.WorstWorkerKill.From.Format("15:04:05"),
			st.WorstWorkerKill.To.Format("15:04:05"), scanTarget)
	}
	if len(tl.Overlapping(time.Time{}, now, 0)) > 0 && !hasKind(tl, KillWorker) {
		c.notef("no worker was killed: nothing to measure")
	}
	return c
}

func hasKind(tl *Timeline, k Kind) bool {
	for _, f := range tl.Injected() {
		if f.Kind == k {
			return true
		}
	}
	return false
}

func fmtDur(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
