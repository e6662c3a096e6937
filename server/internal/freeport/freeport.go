// Package freeport picks a TCP port no one listens on, for the local processes `coffer dev`
// starts (the dev chain, the PostgreSQL cluster). The port is free when picked; a process that
// races for it fails to bind and its caller picks again.
package freeport

import (
	"context"
	"fmt"
	"net"
)

// Pick is a TCP port of host that no one listens on at the moment.
func Pick(ctx context.Context, host string) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("freeport: %s is not a TCP address", l.Addr())
	}
	return addr.Port, nil
}
