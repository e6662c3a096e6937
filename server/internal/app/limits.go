package app

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// Server-wide HTTP limits. A request's headers must arrive within ReadHeaderTimeout and fit
// MaxHeaderBytes; an idle keep-alive connection is closed after IdleTimeout. Per request, the
// body must arrive within the read timeout and fit the route's limit, and the answer must be
// written within the write timeout (streams excepted).
const (
	ReadHeaderTimeout = 5 * time.Second
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 32 << 10
)

// streaming reports the routes that answer with a long-lived stream: no write deadline.
func streaming(path string) bool {
	return path == cofferv1connect.WidgetServiceWatchDepositsProcedure || path == cofferv1connect.EventServiceSubscribeEventsProcedure
}

func bodyLimit(r *http.Request) int64 {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return 0
	}
	// The bodies smaller than rpc.MaxRequestBytes, by path prefix: a login is a few hundred
	// bytes, a stream's opening message a sid.
	small := [...]string{"/admin/login", cofferv1connect.AdminServiceLoginProcedure, cofferv1connect.WidgetServiceWatchDepositsProcedure,
		cofferv1connect.EventServiceSubscribeEventsProcedure}
	for _, prefix := range small {
		if strings.HasPrefix(r.URL.Path, prefix) {
			return rpc.MaxSmallRequestBytes
		}
	}
	return rpc.MaxRequestBytes
}

// limitRequests bounds each request: its body to the route's size and to arrive within
// readTimeout (a client that trickles or never finishes a body loses the connection: nothing
// is held open waiting for it), and its answer to be written within writeTimeout (streams
// excepted). The read deadline ends once the body is read: it guards the body, not the
// handler's work (the server watches the idle connection for a client that goes away, and a
// deadline left there would cancel a slow handler's context).
func limitRequests(next http.Handler, readTimeout, writeTimeout time.Duration) http.Handler {
	// Zero: the configuration's defaults (a Config built in code, not read).
	if readTimeout <= 0 {
		readTimeout = config.Defaults().HTTPReadTimeout
	}
	if writeTimeout <= 0 {
		writeTimeout = config.Defaults().HTTPWriteTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if !streaming(r.URL.Path) {
			// Not every writer supports deadlines (httptest recorders); real connections do.
			_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		}
		if r.Body != nil && r.Body != http.NoBody {
			_ = rc.SetReadDeadline(time.Now().Add(readTimeout))
			r.Body = &deadlineBody{ReadCloser: http.MaxBytesReader(w, r.Body, bodyLimit(r)), rc: rc, header: w.Header()}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the request body is fully read. A body that
// fails (too slow, too large) closes the connection after the answer: the rest of it is not
// waited for.
type deadlineBody struct {
	io.ReadCloser

	rc     *http.ResponseController
	header http.Header
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		b.header.Set("Connection", "close")
	}
	return n, err
}
