package app_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestOperatorKeyForms: a revoked key, and forms of a valid key that are not the key (another
// case, a wrong or missing prefix, a character inside it changed to whitespace, very long),
// are UNAUTHENTICATED over REST and Connect, in the documented envelope; whitespace around
// the credential is not part of it.
func TestOperatorKeyForms(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, key := env.Operator(t, domain.OperatorSettings{})
	revoked := key
	key, _, err := env.Services.Operators.RotateKey(t.Context(), op.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := cofferv1connect.NewEventServiceClient(http.DefaultClient, env.URL)
	body := strings.TrimPrefix(key, "sk_")
	cases := []struct {
		name, cred string
		ok         bool
	}{
		{"valid", key, true},
		{"surrounding whitespace", " " + key + "\t", true},
		{"revoked", revoked, false},
		{"upper case", strings.ToUpper(key), false},
		{"prefix only upper", "SK_" + body, false},
		{"no prefix", body, false},
		{"other prefix", "pk_" + body, false},
		{"inner space", key[:len(key)/2] + " " + key[len(key)/2+1:], false},
		{"trailing extra", key + "x", false},
		{"very long", key + strings.Repeat("a", 6000), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := env.Do(t, http.MethodGet, "/events", tc.cred, "")
			defer res.Body.Close()
			want := http.StatusOK
			if !tc.ok {
				want = http.StatusUnauthorized
			}
			if res.StatusCode != want {
				t.Errorf("REST GET /events: %d; want %d", res.StatusCode, want)
			}
			_, err := c.ListEvents(withBearer(t.Context(), tc.cred), &cofferv1.EventServiceListEventsRequest{})
			switch {
			case tc.ok && err != nil:
				t.Errorf("Connect ListEvents: %v; want served", err)
			case !tc.ok && connect.CodeOf(err) != connect.CodeUnauthenticated:
				t.Errorf("Connect ListEvents: %v; want unauthenticated", err)
			}
			var ce *connect.Error
			if !tc.ok && errors.As(err, &ce) && ce.Message() == "" {
				t.Errorf("Connect ListEvents: no message")
			}
		})
	}
}
