package app_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/session"
)

// rawRequest writes text on a new connection, then reads until the server answers or closes;
// it returns what was read and how long the server took.
func rawRequest(t *testing.T, addr, text string, keepOpen time.Duration) (string, time.Duration) {
	t.Helper()
	var d net.Dialer
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, text); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(keepOpen)); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(bufio.NewReader(conn))
	return string(out), time.Since(start)
}

// What was seen: a request with an incomplete body stayed open for 70+ s. The body must arrive
// within the read timeout, headers within 5 s; oversized headers and bodies are refused.
func TestHTTPLimits(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{HTTPReadTimeout: time.Second})
	addr := strings.TrimPrefix(env.URL, "http://")
	_, key := env.Operator(t, domain.OperatorSettings{})

	t.Run("a body that never finishes", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/session/deposit", "/coffer.v1.SessionService/CreateDepositSession"} {
			out, took := rawRequest(t, addr, "POST "+path+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+
				"\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"externalUserId\":", 20*time.Second)
			if took > 5*time.Second {
				t.Fatalf("%s: the server held an incomplete body for %v: %q", path, took, out)
			}
			if path == "/session/deposit" && !strings.Contains(out, "408") {
				t.Errorf("%s: answered %q, want 408", path, firstLine(out))
			}
		}
	})
	t.Run("headers that never finish", func(t *testing.T) {
		t.Parallel()
		_, took := rawRequest(t, addr, "POST /session/deposit HTTP/1.1\r\nHost: x\r\nX-Slow: ", 20*time.Second)
		if took > 8*time.Second {
			t.Fatalf("the server waited %v for headers", took)
		}
	})
	t.Run("oversized headers", func(t *testing.T) {
		t.Parallel()
		out, _ := rawRequest(t, addr, "GET /chain HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 40<<10)+"\r\n\r\n", 10*time.Second)
		if !strings.Contains(firstLine(out), "431") {
			t.Fatalf("40 KiB of headers: %q, want 431", firstLine(out))
		}
	})
	t.Run("per-route body limits", func(t *testing.T) {
		t.Parallel()
		login := `{"email":"a@b.c","password":"` + strings.Repeat("p", 5<<10) + `"}`
		res := env.Do(t, "POST", "/admin/login", "", login)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("a 5 KiB login: %d, want 413", res.StatusCode)
		}
		admin := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
		if _, err := admin.Login(context.Background(), &cofferv1.LoginRequest{Email: "a@b.c", Password: strings.Repeat("p", 5<<10)}); connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("a 5 KiB Connect login: %v", err)
		}
		// A session body of 10 KiB is fine (the general limit is 64 KiB).
		res = env.Do(t, "POST", "/session/deposit", key, `{"externalUserId":"u","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"1","email":"`+
			strings.Repeat("e", 100)+`@x.io","operatorReference":"`+strings.Repeat("r", 100)+`"}`+strings.Repeat(" ", 10<<10))
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("a 10 KiB session body: %d", res.StatusCode)
		}
	})
	t.Run("a stream outlives the read timeout", func(t *testing.T) {
		t.Parallel()
		op, _ := env.Operator(t, domain.OperatorSettings{})
		o, err := env.Services.Sessions.Open(context.Background(), op, session.Deposit, session.Input{ExternalUserID: "s", Lang: "en",
			FiatCurrency: "USD", UserBalance: "0", Amount: "5"})
		if err != nil {
			t.Fatal(err)
		}
		// Cancelled, not timed out: a deadline would travel to the server (Connect-Timeout-Ms),
		// which ends the stream cleanly at it.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stop := time.AfterFunc(3*time.Second, cancel)
		defer stop.Stop()
		widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
		stream, err := widget.WatchDeposits(ctx, &cofferv1.WatchDepositsRequest{Sid: o.Session.ID})
		if err != nil {
			t.Fatal(err)
		}
		for stream.Receive() {
		}
		if ctx.Err() == nil {
			t.Fatalf("the stream ended after less than 3 s: %v", stream.Err())
		}
	})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// Hostile bodies (too large, deeply nested JSON, a huge string or array) on the public
// listener (REST and Connect's JSON) and the internal one (OpsService) get a clear error —
// REST in its envelope, Connect as a Connect error (resource_exhausted is HTTP 429 in the
// Connect protocol) — and change nothing.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, key := env.Operator(t, domain.OperatorSettings{})
	nested := `{"externalUserId":` + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + `}`
	nestedOps := `{"settings":{"name":` + strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000) + `}}`
	huge := `{"externalUserId":"` + strings.Repeat("u", 100<<10) + `"}`
	hugeArray := `{"settings":{"name":[` + strings.Repeat("1,", 20<<10) + `1]}}`
	type target struct {
		name, url, bearer string
		connect           bool
	}
	rest := target{"REST /session/deposit", env.URL + "/session/deposit", key, false}
	conn := target{"Connect CreateDepositSession", env.URL + "/coffer.v1.SessionService/CreateDepositSession", key, true}
	ops := target{"Connect OpsService.CreateOperator", env.InternalURL + "/coffer.v1.OpsService/CreateOperator", env.OpsToken, true}
	cases := []struct {
		about  string
		to     target
		body   string
		status int
		code   string // REST data.code, or the Connect error code
	}{
		{"100 KiB", rest, huge, 413, "PAYLOAD_TOO_LARGE"},
		{"100 KiB", conn, huge, 429, "resource_exhausted"},
		{"100 KiB", ops, `{"settings":{"name":"` + strings.Repeat("n", 100<<10) + `"}}`, 429, "resource_exhausted"},
		{"nested 30000 deep", rest, nested, 400, "INVALID_ARGUMENT"},
		{"nested 30000 deep", conn, nested, 400, "invalid_argument"},
		{"nested 10000 deep", ops, nestedOps, 400, "invalid_argument"},
		{"a 20k array where a string goes", ops, hugeArray, 400, "invalid_argument"},
	}
	operators, sessions := env.Count(t, "operators"), env.Count(t, "sessions")
	for _, tc := range cases {
		t.Run(tc.to.name+" "+tc.about, func(t *testing.T) {
			t.Parallel()
			res := proctest.Request(t, http.MethodPost, tc.to.url, tc.to.bearer, tc.body)
			out, b := readAnswer(t, res)
			code := out.Data.Code
			if tc.to.connect {
				code = out.Code
			}
			if res.StatusCode != tc.status || code != tc.code {
				t.Errorf("%d %q (%.200s); want %d %q", res.StatusCode, code, b, tc.status, tc.code)
			}
		})
	}
	t.Cleanup(func() {
		if n := env.Count(t, "operators"); n != operators {
			t.Errorf("operators %d → %d", operators, n)
		}
		if n := env.Count(t, "sessions"); n != sessions {
			t.Errorf("sessions %d → %d", sessions, n)
		}
	})
}
