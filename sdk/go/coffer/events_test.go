package coffer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/sdk/go/coffer"
)

// feed is a stub event feed of events e1..eN whose cursors are "c<n>" (after event n). Its
// streams drop: the first after 3 events with UNAVAILABLE, the second ends cleanly after 2,
// then they stream the rest and wait.
type feed struct {
	cofferv1connect.UnimplementedEventServiceHandler

	n       int
	mu      sync.Mutex
	afters  []string // each stream's After
	keys    []string // each stream's Authorization
	streams int
}

func position(after string) int {
	if after == "" {
		return 0
	}
	n, _ := strconv.Atoi(after[1:])
	return n
}

func (f *feed) event(i int) *cofferv1.FeedEvent {
	return &cofferv1.FeedEvent{EventId: "e" + strconv.Itoa(i)}
}

func (f *feed) ListEvents(_ context.Context, req *cofferv1.EventServiceListEventsRequest) (*cofferv1.EventServiceListEventsResponse, error) {
	from, limit := position(req.GetAfter()), int(req.GetLimit())
	res := &cofferv1.EventServiceListEventsResponse{NextCursor: req.GetAfter()}
	for i := from + 1; i <= f.n && len(res.Events) < limit; i++ {
		res.Events = append(res.Events, f.event(i))
		res.NextCursor = "c" + strconv.Itoa(i)
	}
	return res, nil
}

func (f *feed) SubscribeEvents(ctx context.Context, req *cofferv1.SubscribeEventsRequest, stream *connect.ServerStream[cofferv1.SubscribeEventsResponse]) error {
	f.mu.Lock()
	f.afters = append(f.afters, req.GetAfter())
	f.streams++
	nth := f.streams
	f.mu.Unlock()
	quota := map[int]int{1: 3, 2: 2}[nth]
	sent := 0
	for i := position(req.GetAfter()) + 1; i <= f.n; i++ {
		if quota > 0 && sent == quota {
			if nth == 1 {
				return connect.NewError(connect.CodeUnavailable, errors.New("dropped"))
			}
			return nil
		}
		if err := stream.Send(&cofferv1.SubscribeEventsResponse{Event: f.event(i), Cursor: "c" + strconv.Itoa(i)}); err != nil {
			return err
		}
		sent++
	}
	<-ctx.Done()
	return nil
}

func serveFeed(t *testing.T, f *feed) *coffer.Client {
	t.Helper()
	mux := http.NewServeMux()
	path, h := cofferv1connect.NewEventServiceHandler(f)
	mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.keys = append(f.keys, r.Header.Get("Authorization"))
		f.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.Start()
	t.Cleanup(srv.Close)
	return coffer.New(srv.URL, "sk_test")
}

// TestSubscribeEventsResumes: the helper reconnects after a dropped stream and after a clean
// end, each time from the last cursor it yielded: every event once, in order.
func TestSubscribeEventsResumes(t *testing.T) {
	t.Parallel()
	f := &feed{n: 9}
	c := serveFeed(t, f)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got []string
	for msg, err := range c.SubscribeEvents(ctx, &cofferv1.SubscribeEventsRequest{After: "c1"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.GetEvent().GetEventId())
		if len(got) == 8 {
			break
		}
	}
	if want := []string{"e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"}; !slices.Equal(got, want) {
		t.Fatalf("events %v; want %v", got, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []string{"c1", "c4", "c6"}; !slices.Equal(f.afters, want) {
		t.Errorf("streams opened after %v; want %v", f.afters, want)
	}
	for _, k := range f.keys {
		if k != "Bearer sk_test" {
			t.Errorf("a stream carried Authorization %q", k)
		}
	}
}

// TestSubscribeEventsStopsOnCallerErrors: an error reconnecting cannot cure is yielded once.
func TestSubscribeEventsStopsOnCallerErrors(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle(cofferv1connect.NewEventServiceHandler(&badCursor{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	var errs []error
	for _, err := range coffer.New(srv.URL, "sk_test").SubscribeEvents(t.Context(), &cofferv1.SubscribeEventsRequest{After: "x"}) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || connect.CodeOf(errs[0]) != connect.CodeInvalidArgument {
		t.Fatalf("errors %v", errs)
	}
}

type badCursor struct {
	cofferv1connect.UnimplementedEventServiceHandler
}

func (badCursor) SubscribeEvents(context.Context, *cofferv1.SubscribeEventsRequest, *connect.ServerStream[cofferv1.SubscribeEventsResponse]) error {
	return connect.NewError(connect.CodeInvalidArgument, errors.New("after: is not a cursor"))
}

// TestAllEvents walks the feed page by page until a short page.
func TestAllEvents(t *testing.T) {
	t.Parallel()
	c := serveFeed(t, &feed{n: 7})
	var ids []string
	for e, err := range c.AllEvents(t.Context(), &cofferv1.EventServiceListEventsRequest{After: "c2", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.GetEventId())
	}
	if fmt.Sprint(ids) != "[e3 e4 e5 e6 e7]" {
		t.Fatalf("events %v", ids)
	}
}
