package proctest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FreePort is a loopback TCP port no one listens on at the moment.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		t.Fatalf("%s is not a TCP address", ln.Addr())
	}
	return addr.Port
}

// FreeAddr is a loopback address ("127.0.0.1:port") no one listens on at the moment.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// OK reports whether a GET of url answers 200 OK.
func OK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// WaitOK polls url every interval until it answers 200 OK (true) or ctx ends (false).
func WaitOK(ctx context.Context, url string, interval time.Duration) bool {
	for ctx.Err() == nil {
		if OK(ctx, url) {
			return true
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
	return false
}

// Request sends a request bound to the test's context, with a JSON body and a Bearer credential
// unless they are empty; the test fails when no answer comes.
func Request(t testing.TB, method, url, bearer, body string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
