package chaos

// Regression is a seed that failed once. Flaky is failing: a seed that ever fails is added
// here, with what it showed, and is run by CI from then on (make chaos-regressions).
type Regression struct {
	Seed uint64
	// Minutes of load (CHAOS_MINUTES) it failed with.
	Minutes float64
	// Why: what it showed, and what fixed it.
	Why string
}

// Regressions are the kept seeds.
var Regressions = []Regression{}
