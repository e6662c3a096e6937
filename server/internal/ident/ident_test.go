package ident

import (
	"errors"
	"testing"

	"github.com/cofferhq/coffer/server/internal/fault"
)

func TestRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, value string
		check       func(string) error
		field       string // "" when accepted
	}{
		{"user id", "user-7", UserID, ""},
		{"user id with spaces around", " user 7 ", UserID, ""},
		{"empty user id", "", UserID, "externalUserId"},
		{"blank user id", " \u00a0\u200b", UserID, "externalUserId"},
		{"null user id", "null", UserID, "externalUserId"},
		{"no filter", "", UserFilter, ""},
		{"filter", "user-7", UserFilter, ""},
		{"blank filter", " ", UserFilter, "externalUserId"},
		{"null filter", "null", UserFilter, "externalUserId"},
		{"no reference", "", Reference, ""},
		{"reference", "order-1", Reference, ""},
		{"blank reference", "\ufeff ", Reference, "operatorReference"},
		{"null reference", "null", Reference, "operatorReference"},
	} {
		err := c.check(c.value)
		fe, _ := errors.AsType[*fault.Error](err)
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s %q refused: %v", c.name, c.value, err)
		case c.field != "" && (fe == nil || fe.Code != fault.InvalidArgument || fe.Field != c.field):
			t.Errorf("%s %q: %v, want INVALID_ARGUMENT on %s", c.name, c.value, err, c.field)
		}
	}
}
