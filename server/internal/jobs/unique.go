package jobs

import (
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// LiveStates are the River states of a job that will still run. Completed, cancelled and
// discarded jobs are not in it, so a new job with the same args can follow them.
func LiveStates() []rivertype.JobState {
	return []rivertype.JobState{
		rivertype.JobStateAvailable,
		rivertype.JobStatePending,
		rivertype.JobStateRunning,
		rivertype.JobStateRetryable,
		rivertype.JobStateScheduled,
	}
}

// OnePerArgs keeps at most one live job per kind and args: inserting another while one is
// queued or running does nothing.
func OnePerArgs() river.UniqueOpts {
	return river.UniqueOpts{ByArgs: true, ByState: LiveStates()}
}
