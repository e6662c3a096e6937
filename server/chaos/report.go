package chaos

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Run is one chaos run, for the report.
type Run struct {
	Settings Settings
	Schedule []Fault
	Dir      string
	// Start is the start of the load, LoadEnd its end (and the faults'), End the end of the
	// drain.
	Start, LoadEnd, End time.Time
	Unsettled           []string

	Stack    *Stack
	Load     *Load
	API      *API
	Timeline *Timeline
	Monitor  *Monitor
	Recv     *Receiver
	Checks   []*Check
	World    *world
}

// Failed reports a violated invariant.
func (r *Run) Failed() bool {
	for _, c := range r.Checks {
		if !c.OK() {
			return true
		}
	}
	return len(r.Checks) == 0
}

// Report renders the run in plain text.
func (r *Run) Report() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	set := r.Settings
	p("Coffer chaos report")
	p("===================")
	p("seed %d, load %s (CHAOS_MINUTES), drain up to %s, sweepMethod %s (CHAOS_SWEEP); load %s – %s, drain ended %s",
		set.Seed, set.Load, set.Drain, set.Sweep, r.Start.Format("2006-01-02 15:04:05"), r.LoadEnd.Format("15:04:05"), r.End.Format("15:04:05"))
	if len(r.Unsettled) == 0 {
		p("the system settled %s after the load ended", r.End.Sub(r.LoadEnd).Round(time.Second))
	} else {
		p("NOT SETTLED by the end of the drain: %s", strings.Join(r.Unsettled, "; "))
	}
	p("system: 2 API + 2 worker replicas of `coffer serve` (production defaults%s), one private PostgreSQL cluster,",
		map[bool]string{true: "; extra: " + strings.Join(set.ServeEnv, " ")}[len(set.ServeEnv) > 0])
	p("        geth --dev (1 s blocks, %d confirmations), assets ETH, USDT, USDC; 2 operators (sync approval + 1%% fee; external approval)", r.Stack.Confirmations)
	p("run directory: %s", r.Dir)
	p("")

	p("Fault schedule (from the seed)")
	b.WriteString(FormatSchedule(r.Schedule))
	injected := r.Timeline.Injected()
	byKind := map[Kind]int{}
	for _, f := range injected {
		byKind[f.Kind]++
	}
	var kinds []string
	for _, k := range Kinds() {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, byKind[k]))
	}
	p("")
	p("Faults injected: %d (%s)", len(injected), strings.Join(kinds, ", "))
	for i, f := range injected {
		status := f.Note
		if f.Err != "" {
			status = "ERROR: " + f.Err
		}
		p("  %2d. %s–%s  %-16s %-10s %s", i+1, f.Start.Format("15:04:05.0"), f.End.Format("15:04:05.0"), f.Kind, f.Target, status)
	}
	p("")

	r.reportLoad(p)
	r.reportLag(p)
	r.reportRecovery(p)

	p("Invariants")
	failed := 0
	for _, c := range r.Checks {
		mark := "PASS"
		if !c.OK() {
			mark = "FAIL"
			failed++
		}
		p("  [%s] %s", mark, c.Name)
		for i, v := range c.Violations {
			if i == 40 {
				p("         … and %d more", len(c.Violations)-40)
				break
			}
			p("         - %s", indentLines(v, "           "))
		}
		for i, n := range c.Notes {
			if i == 15 {
				p("         (… and %d more notes)", len(c.Notes)-15)
				break
			}
			p("         · %s", indentLines(n, "           "))
		}
	}
	p("")
	if failed > 0 {
		p("RESULT: FAIL — %d of %d invariants violated (seed %d)", failed, len(r.Checks), set.Seed)
	} else {
		p("RESULT: PASS — %d invariants hold (seed %d)", len(r.Checks), set.Seed)
	}
	var logs []string
	for _, rep := range r.Stack.Replicas() {
		logs = append(logs, filepath.Base(rep.LogPath))
	}
	p("logs: %s in %s; PostgreSQL: pg/server.log", strings.Join(logs, ", "), r.Dir)
	return b.String()
}

func (r *Run) reportLoad(p func(string, ...any)) {
	payments, withdrawals := r.Load.Ledger.Snapshot()
	byAsset, treasury := map[string]int{}, map[string]int{}
	users := map[string]bool{}
	for _, pay := range payments {
		if pay.Treasury {
			treasury[pay.Asset.Symbol]++
			continue
		}
		byAsset[pay.Asset.Symbol]++
		users[pay.Operator.Name+"/"+pay.User] = true
	}
	assetCounts := func(m map[string]int) string {
		n, parts := 0, []string{}
		for _, a := range r.Stack.Assets {
			n += m[a.Symbol]
			parts = append(parts, fmt.Sprintf("%s %d", a.Symbol, m[a.Symbol]))
		}
		return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
	}
	p("Load")
	r.Load.Ledger.mu.Lock()
	sessions := r.Load.Ledger.Sessions
	refused := map[string]int{}
	maps.Copy(refused, r.Load.Ledger.Refused)
	r.Load.Ledger.mu.Unlock()
	p("  deposit sessions opened          %d", sessions)
	p("  payments to deposit addresses    %s, from %d users", assetCounts(byAsset), len(users))
	p("  payments to treasury addresses   %s (3 of them at set-up)", assetCounts(treasury))
	if w := r.World; w != nil {
		status := map[string]int{}
		for _, d := range w.deposits {
			status[d.Status]++
		}
		p("  deposits recorded                %d: %s", len(w.deposits), countsOf(status))
		modes := map[string]int{}
		final := map[string]map[string]int{"SYNC": {}, "EXTERNAL": {}}
		for _, wd := range w.withdrawals {
			modes[wd.Mode]++
			final[wd.Mode][wd.Status]++
		}
		p("  withdrawals                      %d submitted with an id returned (%d in the database)", len(withdrawals), len(w.withdrawals))
		p("    mode A (sync approval, admin) %d: %s", modes["SYNC"], countsOf(final["SYNC"]))
		p("    mode B (external approval)    %d: %s", modes["EXTERNAL"], countsOf(final["EXTERNAL"]))
	}
	if len(refused) > 0 {
		p("  mode A submissions refused       %s", countsOf(refused))
	}
	classes := map[string]int{}
	calls := r.API.Calls()
	failover := 0
	for _, c := range calls {
		class, _ := classify(c, r.Timeline)
		if class == classRefusal || class == classWrong || class == classInternal {
			class = fmt.Sprintf("%d %s", c.Status, c.Code)
		}
		classes[class]++
		failover += c.Failover
	}
	p("  client calls (REST)              %d: %s; %d connections refused by a down replica and sent to the other", len(calls), countsOf(classes), failover)
	outcomes := map[string]int{}
	ids := map[string]int{}
	for _, d := range r.Recv.Deliveries() {
		o := d.Outcome
		if strings.HasPrefix(o, "failed:") {
			o = "failed (receiver down)"
		}
		outcomes[o]++
		if d.Acked {
			ids[d.ID]++
		}
	}
	dup := 0
	for _, n := range ids {
		if n > 1 {
			dup += n - 1
		}
	}
	p("  webhook requests received        %d: %s; acknowledged again after an ack (same webhook-id): %d", len(r.Recv.Deliveries()), countsOf(outcomes), dup)
	p("")
}

func (r *Run) reportLag(p func(string, ...any)) {
	payments, _ := r.Load.Ledger.Snapshot()
	first := map[string]time.Time{}
	for _, d := range r.Recv.Deliveries() {
		if d.Acked && d.Event == "DEPOSIT" {
			tx := strings.ToLower(d.Form.Get("transactionHash"))
			if t, ok := first[tx]; !ok || d.Answered.Before(t) {
				first[tx] = d.Answered
			}
		}
	}
	var lags []time.Duration
	var worst *Payment
	var worstLag time.Duration
	missing := 0
	for _, pay := range payments {
		if pay.Treasury {
			continue
		}
		t, ok := first[strings.ToLower(pay.Tx.Hex())]
		if !ok {
			missing++
			continue
		}
		lag := t.Sub(pay.Mined)
		lags = append(lags, lag)
		if lag > worstLag {
			worstLag, worst = lag, pay
		}
	}
	p("Detection lag: payment mined (receipt seen) → DEPOSIT webhook acknowledged by the operator")
	if len(lags) == 0 {
		p("  no deposits delivered")
	} else {
		during := ""
		if worst != nil {
			var kinds []string
			for _, f := range r.Timeline.Overlapping(worst.Mined, worst.Mined.Add(worstLag), 0) {
				kinds = append(kinds, string(f.Kind)+" "+f.Target)
			}
			if len(kinds) > 0 {
				during = ", across " + strings.Join(kinds, " + ")
			}
		}
		p("  %d deposits: p50 %s, p90 %s, max %s (tx %s%s)", len(lags), fmtDur(percentile(lags, 50)), fmtDur(percentile(lags, 90)),
			fmtDur(worstLag), short(worst.Tx.Hex()), during)
	}
	if missing > 0 {
		p("  %d deposit payments had no DEPOSIT acknowledged by the end", missing)
	}
	p("")
}

func (r *Run) reportRecovery(p func(string, ...any)) {
	enforced := "not enforced (CHAOS_ENFORCE_RECOVERY=0): a missed target is only reported"
	if r.Settings.EnforceRecovery {
		enforced = "enforced; CHAOS_ENFORCE_RECOVERY=0 only reports"
	}
	p("Worst gap per job kind after a worker was killed (%s)", enforced)
	p("  gap: from the start of the attempt running on the killed worker to the end of the job's next run by another")
	p("  worker (it completed, or a live worker snoozed or retried it); pickup: kill → another worker's attempt")
	p("  %-26s %5s %10s %8s %12s  %s", "job kind", "jobs", "worst gap", "target", "worst pickup", "")
	for _, row := range RecoveryTable(r.Monitor.Killed(), r.End) {
		verdict := ""
		switch {
		case row.Jobs == 0:
			verdict = "not observed (none was running on a killed worker)"
		case row.Missed():
			verdict = "MISSED"
		case row.Target > 0:
			verdict = "ok"
		}
		if row.Unrecovered > 0 {
			verdict += fmt.Sprintf(" (%d never taken up again)", row.Unrecovered)
		}
		target := "—"
		if row.Target > 0 {
			target = fmt.Sprintf("%.0f s", row.Target.Seconds())
		}
		p("  %-26s %5d %10s %8s %12s  %s", row.Label, row.Jobs, fmtDur(row.WorstGap), target, fmtDur(row.WorstPickup), verdict)
	}
	st := SummarizeStalls(r.Monitor.Stalls(), r.Timeline)
	p("  chain scan cursor, longest stand-still while blocks were produced (polled every 0.5 s):")
	verdict := "ok"
	if st.WorstWorkerKill.Length() > scanTarget {
		verdict = "MISSED"
	}
	if !hasKind(r.Timeline, KillWorker) {
		verdict = "no worker was killed"
	}
	stall := func(s Stall) string {
		if s.Length() == 0 {
			return fmt.Sprintf("< %.0f s", minStall.Seconds())
		}
		return fmtDur(s.Length())
	}
	p("    begun during a worker kill    %8s  target %.0f s  %s", stall(st.WorstWorkerKill), scanTarget.Seconds(), verdict)
	for _, k := range []Kind{KillAPI, RestartPostgres, ReceiverFail, ReceiverHang} {
		p("    begun during %-16s %8s", string(k), stall(st.ByFault[k]))
	}
	p("    begun with no fault           %8s", stall(st.Quiet))
	p("    overall                       %8s", stall(st.Worst))
	stalls := r.Monitor.Stalls()
	sort.Slice(stalls, func(i, j int) bool { return stalls[i].Length() > stalls[j].Length() })
	if len(stalls) > 0 {
		p("    longest stalls (%d of %s or more):", len(stalls), minStall)
	}
	for i, s := range stalls {
		if i == 5 {
			break
		}
		var causes []string
		for _, f := range stallCauses(s, r.Timeline) {
			causes = append(causes, string(f.Kind)+" "+f.Target)
		}
		open := ""
		if s.Open {
			open = " (still stalled when the run ended)"
		}
		p("      %s → %s  %8s  %s%s", s.From.Format("15:04:05.0"), s.To.Format("15:04:05.0"), fmtDur(s.Length()),
			orDefault(strings.Join(causes, " + "), "no fault"), open)
	}
	p("")
}

// WriteReport writes the report to the settings' path, or chaos-report.txt in the run's
// directory, and returns the path.
func (r *Run) WriteReport(text string) (string, error) {
	path := r.Settings.Report
	if path == "" {
		path = filepath.Join(r.Dir, "chaos-report.txt")
	}
	return path, os.WriteFile(path, []byte(text), 0o600)
}

func percentile(ds []time.Duration, pct int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	i := (len(s)*pct + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func countsOf(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func indentLines(s, prefix string) string { return strings.ReplaceAll(s, "\n", "\n"+prefix) }
