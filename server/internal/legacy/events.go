package legacy

import (
	"net/http"
	"strconv"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/envelope"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// The operator's event feed (DESIGN.md "Operator reconciliation API"): GET /events and
// POST /events/{eventId}/redeliver, in the spec's envelope.

// eventItem is an event on the REST layer: what its webhook carries (fields: the form fields
// exactly as sent, every value a string) and its delivery state; absent values are null.
type eventItem struct {
	EventID     string            `json:"eventId"`
	Type        string            `json:"type"`
	CreatedAt   *time.Time        `json:"createdAt"`
	Test        bool              `json:"test"`
	OperatorID  string            `json:"operatorId"`
	Fields      map[string]string `json:"fields"`
	State       string            `json:"state"`
	Attempts    int32             `json:"attempts"`
	LastStatus  *int32            `json:"lastStatus"`
	DeliveredAt *time.Time        `json:"deliveredAt"`
	DeadAt      *time.Time        `json:"deadAt"`
}

func eventJSON(e *cofferv1.FeedEvent) eventItem {
	fields := e.GetFields()
	if fields == nil {
		fields = map[string]string{}
	}
	return eventItem{EventID: e.GetEventId(), Type: shortEnum(e.GetType()), CreatedAt: timeOf(e.GetCreatedAt()), Test: e.GetTest(),
		OperatorID: e.GetOperatorId(), Fields: fields, State: shortEnum(e.GetState()), Attempts: e.GetAttempts(),
		LastStatus: e.LastStatus, DeliveredAt: timeOf(e.GetDeliveredAt()), DeadAt: timeOf(e.GetDeadAt())}
}

// feedJSON is GET /events's data: the events and the cursor to resume from (never null).
type feedJSON struct {
	Items      []eventItem `json:"items"`
	NextCursor string      `json:"nextCursor"`
}

// listEvents is GET /events?after=<cursor>&limit=<1..200>[&operatorId=<sub-operator>].
func (h *Handler) listEvents(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := knownParams(q, "GET /events", "after", "limit", "operatorId"); err != nil {
		return err
	}
	req := &cofferv1.EventServiceListEventsRequest{OperatorId: q.Get("operatorId"), After: q.Get("after")}
	if raw, ok := q["limit"]; ok {
		n, err := strconv.ParseInt(raw[0], 10, 32)
		if err != nil || n < 1 || n > 200 {
			return fault.Invalid("limit", "must be an integer from 1 to 200")
		}
		req.Limit = int32(n)
	}
	if raw, ok := q["after"]; ok && raw[0] == "" {
		return fault.Invalid("after", "is empty; leave it out to read from the feed's start")
	}
	if err := rpc.Validate(req); err != nil {
		return err
	}
	res, err := h.s.Event.ListEvents(r.Context(), req)
	if err != nil {
		return err
	}
	envelope.Success(w, "Events", feedJSON{Items: each(res.GetEvents(), eventJSON), NextCursor: res.GetNextCursor()})
	return nil
}

// redeliverEvent is POST /events/{eventId}/redeliver, with an optional body
// {"operatorId": "<sub-operator>"}.
func (h *Handler) redeliverEvent(w http.ResponseWriter, r *http.Request) error {
	if len(r.URL.Query()) > 0 {
		for name := range r.URL.Query() {
			return fault.Invalid(name, "unknown query parameter; POST /events/{eventId}/redeliver takes a body {\"operatorId\"}")
		}
	}
	res, err := callWithPath(r, h.s.Event.RedeliverEvent, true,
		func(req *cofferv1.RedeliverEventRequest) { req.EventId = r.PathValue("eventId") }, "eventId")
	if err != nil {
		return err
	}
	envelope.Success(w, "Redelivery queued", eventJSON(res.GetEvent()))
	return nil
}
