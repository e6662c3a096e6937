package fault

import (
	"net/http"
	"testing"
)

// TestMetricCode: REST statuses get the Connect code names Connect requests are counted
// under, so one `code` label vocabulary covers both transports.
func TestMetricCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   string
	}{
		{http.StatusOK, "ok"},
		{http.StatusNoContent, "ok"},
		{http.StatusBadRequest, "invalid_argument"},
		{http.StatusUnauthorized, "unauthenticated"},
		{http.StatusForbidden, "permission_denied"},
		{http.StatusNotFound, "not_found"},
		{http.StatusMethodNotAllowed, "unimplemented"},
		{http.StatusConflict, "already_exists"},
		{http.StatusGone, "failed_precondition"},
		{http.StatusRequestEntityTooLarge, "resource_exhausted"},
		{http.StatusUnprocessableEntity, "failed_precondition"},
		{http.StatusTooManyRequests, "resource_exhausted"},
		{http.StatusInternalServerError, "internal"},
		{http.StatusServiceUnavailable, "unavailable"},
		{http.StatusTeapot, "unknown"},
	} {
		if got := MetricCode(tc.status); got != tc.want {
			t.Errorf("MetricCode(%d) = %q, want %q", tc.status, got, tc.want)
		}
	}
}
