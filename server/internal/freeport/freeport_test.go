package freeport_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/cofferhq/coffer/server/internal/freeport"
)

// TestPick: the port picked can be listened on at once, and a host that is not an address of
// this machine is an error.
func TestPick(t *testing.T) {
	t.Parallel()
	port, err := freeport.Pick(t.Context(), "127.0.0.1")
	if err != nil || port <= 0 {
		t.Fatalf("Pick = %d, %v", port, err)
	}
	l, err := new(net.ListenConfig).Listen(t.Context(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on the picked port: %v", err)
	}
	l.Close()
	if _, err := freeport.Pick(t.Context(), "192.0.2.1"); err == nil {
		t.Fatal("Pick on an address of another machine succeeded")
	}
}
