package withdrawal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// List pages through withdrawals within a scope (nil: every operator), newest first. The page
// token names the last row of the previous page.
func (s *Service) List(ctx context.Context, scope []string, f domain.WithdrawalFilter, pageToken string) ([]domain.Withdrawal, string, error) {
	if pageToken != "" {
		at, id, err := decodePageToken(pageToken)
		if err != nil {
			return nil, "", fault.Invalid("pageToken", "is not a page token from a previous response")
		}
		f.BeforeTime, f.BeforeID = &at, id
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	asked := ""
	if len(f.OperatorIDs) == 1 {
		asked = f.OperatorIDs[0]
	}
	ids, ok := auth.Narrow(scope, asked)
	if !ok {
		return nil, "", fault.New(fault.NotFound, "operator not found")
	}
	f.OperatorIDs = ids
	list, err := store.New(s.pool).ListWithdrawals(ctx, f)
	if err != nil {
		return nil, "", fault.Wrap(err, "list withdrawals")
	}
	next := ""
	if len(list) == f.Limit {
		last := list[len(list)-1]
		next = encodePageToken(last.CreatedAt, last.ID)
	}
	return list, next, nil
}

func encodePageToken(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "|" + id))
}

func decodePageToken(tok string) (time.Time, string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return time.Time{}, "", err
	}
	micros, id, ok := strings.Cut(string(raw), "|")
	if !ok {
		return time.Time{}, "", errors.New("malformed")
	}
	us, err := strconv.ParseInt(micros, 10, 64)
	if err != nil {
		return time.Time{}, "", err
	}
	if _, err := uuid.Parse(id); err != nil {
		return time.Time{}, "", fmt.Errorf("id: %w", err)
	}
	return time.UnixMicro(us), id, nil
}

// Get returns a withdrawal within scope and its audit trail.
func (s *Service) Get(ctx context.Context, scope []string, id string) (domain.Withdrawal, []domain.WithdrawalTransition, error) {
	q := store.New(s.pool)
	w, err := q.GetWithdrawal(ctx, scope, id)
	if errors.Is(err, store.ErrNotFound) {
		return w, nil, fault.New(fault.NotFound, "withdrawal not found")
	} else if err != nil {
		return w, nil, fault.Wrap(err, "load withdrawal")
	}
	trail, err := q.WithdrawalTransitions(ctx, id)
	if err != nil {
		return w, nil, fault.Wrap(err, "load audit trail")
	}
	return w, trail, nil
}
