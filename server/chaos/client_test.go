package chaos

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCallsGivenUpByTheLoadAreMarked: a call whose context ends before the answer (the load's
// time is up) is marked abandoned; one that gets no answer while the caller still waits is not.
func TestCallsGivenUpByTheLoadAreMarked(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		// Closes the connection without an answer.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	defer close(release)
	api := NewAPI([]*Replica{{Name: "api-1", Addr: strings.TrimPrefix(srv.URL, "http://")}})

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := api.Do(ctx, "POST", "/hang", "", nil); err == nil {
		t.Fatal("a call past its context's end answered")
	}
	if _, err := api.Do(t.Context(), "POST", "/drop", "", nil); err == nil {
		t.Fatal("a dropped connection answered")
	}
	calls := api.Calls()
	if len(calls) != 2 || !calls[0].Abandoned || calls[1].Abandoned || calls[1].Err == "" {
		t.Fatalf("calls: %+v, %+v; want the first abandoned, the second a transport error", calls[0], calls[1])
	}
	tl := &Timeline{}
	if class, bad := classify(calls[0], tl); bad {
		t.Errorf("an abandoned call is a violation (%s)", class)
	}
	if class, bad := classify(calls[1], tl); !bad || class != classTransport {
		t.Errorf("a dropped connection: %s, violation %v; want %s", class, bad, classTransport)
	}
}
