package chaintx

import "time"

// SetClock makes e read the time from now: a test steps the refusal pause instead of sleeping
// through it, so a slow machine cannot stretch a pause the test means to stay within.
func (e *Engine) SetClock(now func() time.Time) { e.now = now }
