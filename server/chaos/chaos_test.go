package chaos

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestChaos runs the seed of CHAOS_SEED for CHAOS_MINUTES (make chaos); skipped unless one
// of them is set.
func TestChaos(t *testing.T) {
	if !Enabled() {
		t.Skip("set CHAOS_MINUTES or CHAOS_SEED to run (make chaos)")
	}
	set, err := SettingsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	RunChaos(t, set)
}

// TestChaosRegressions runs every kept seed (make chaos-regressions); skipped unless
// CHAOS_REGRESSIONS is set.
func TestChaosRegressions(t *testing.T) {
	if os.Getenv("CHAOS_REGRESSIONS") == "" {
		t.Skip("set CHAOS_REGRESSIONS=1 to run the kept seeds (make chaos-regressions)")
	}
	base, err := SettingsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if len(Regressions()) == 0 {
		t.Log("no regression seeds kept yet")
	}
	for _, r := range Regressions() {
		t.Run(fmt.Sprintf("seed=%d", r.Seed), func(t *testing.T) {
			set := base
			set.Seed, set.Load = r.Seed, time.Duration(r.Minutes*float64(time.Minute))
			if r.Sweep != "" {
				set.Sweep = r.Sweep
			}
			set.Report, set.Dir = "", ""
			t.Logf("kept because: %s", r.Why)
			RunChaos(t, set)
		})
	}
}

// The schedule is a function of the seed; every kind of fault fits in a 3-minute run; faults
// never overlap and all end before the quiet end of the load.
func TestSchedule(t *testing.T) {
	for seed := range uint64(200) {
		a, b := Schedule(seed, 3*time.Minute), Schedule(seed, 3*time.Minute)
		if FormatSchedule(a) != FormatSchedule(b) {
			t.Fatalf("seed %d: two schedules", seed)
		}
		kinds := map[Kind]bool{}
		end := time.Duration(0)
		for _, f := range a {
			kinds[f.Kind] = true
			if f.At < end {
				t.Fatalf("seed %d: %s starts before the previous fault ends\n%s", seed, f, FormatSchedule(a))
			}
			end = f.At + f.Down + recoverAllowance
			if end > 3*time.Minute-quiet {
				t.Fatalf("seed %d: %s ends in the quiet end\n%s", seed, f, FormatSchedule(a))
			}
		}
		if len(kinds) != len(Kinds()) {
			t.Fatalf("seed %d: a 3-minute schedule lacks a kind\n%s", seed, FormatSchedule(a))
		}
		if long := Schedule(seed, 15*time.Minute); len(long) < 3*len(a) {
			t.Fatalf("seed %d: 15 minutes give %d faults, 3 minutes %d", seed, len(long), len(a))
		}
	}
	if FormatSchedule(Schedule(1, 3*time.Minute)) == FormatSchedule(Schedule(2, 3*time.Minute)) {
		t.Fatal("seeds 1 and 2 give the same schedule")
	}
}

// River client ids name the time the client was created; each maps to the process started
// last before it.
func TestClientOwner(t *testing.T) {
	created, ok := clientCreated("my_host_name_2026_11_23T05_30_00_123456")
	if !ok || !created.Equal(time.Date(2026, 11, 23, 5, 30, 0, 123456000, time.UTC)) {
		t.Fatalf("parsed %v %v", created, ok)
	}
	p1 := &Proc{Started: created.Add(-5 * time.Second)}
	p2 := &Proc{Started: created.Add(-300 * time.Millisecond)}
	p3 := &Proc{Started: created.Add(time.Second)}
	if got := owner("my_host_name_2026_11_23T05_30_00_123456", []*Proc{p1, p2, p3}); got != p2 {
		t.Fatalf("owner %v", got)
	}
	if owner("nonsense", []*Proc{p1}) != nil {
		t.Fatal("an unparseable id has an owner")
	}
}
