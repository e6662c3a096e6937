package withdrawal

import (
	"context"
	"log/slog"
)

// CloseDue is the expiry job's close of one listed withdrawal, for tests that drive it with a
// change the table refuses.
func (s *Service) CloseDue(ctx context.Context, id string, action Action, note string) (bool, error) {
	return s.closeDue(ctx, id, action, note)
}

// SetLog replaces the service's logger, for tests that read what it logs (call it before the
// service is used).
func (s *Service) SetLog(log *slog.Logger) { s.log = log }
