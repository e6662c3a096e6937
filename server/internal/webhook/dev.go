package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
)

// DevReceiver is the demo operator's webhook endpoint of `coffer dev` (/dev/webhook): it
// verifies the signature against the operator's keys with the SDK, parses the body, logs the
// event's fields and acknowledges it with {"error":0}, approving a synchronous
// WITHDRAW_REQUEST. A bad signature is 401, an unreadable body 400 (both with a non-zero
// error, so Coffer records a failed delivery).
func DevReceiver(keys func(ctx context.Context) [][]byte, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			answer(w, http.StatusMethodNotAllowed, 1, "POST only")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxResponseBody))
		if err != nil {
			answer(w, http.StatusRequestEntityTooLarge, 1, "body too large")
			return
		}
		id := r.Header.Get(sdk.HeaderID)
		verr := errors.New("no operator key")
		for _, k := range keys(r.Context()) {
			if verr = sdk.Verify(r.Header, body, k, time.Now()); verr == nil {
				break
			}
		}
		if verr != nil {
			log.WarnContext(r.Context(), "dev webhook: signature refused", "webhook_id", id, "error", verr)
			answer(w, http.StatusUnauthorized, 1, "invalid signature: "+verr.Error())
			return
		}
		msg, err := sdk.Parse(body)
		if err != nil {
			log.WarnContext(r.Context(), "dev webhook: unreadable body", "webhook_id", id, "error", err)
			answer(w, http.StatusBadRequest, 1, err.Error())
			return
		}
		event := sdk.EventName(msg)
		log.InfoContext(r.Context(), "dev webhook received", "webhook_id", id, "event", event, "test", sdk.IsTest(msg),
			slog.Group("fields", formFields(body)...))
		description := "received"
		if event == sdk.WithdrawRequest {
			description = "approved"
		}
		answer(w, http.StatusOK, 0, description)
	})
}

// formFields are a form body's pairs in order, as log attributes (webhook events carry no
// secrets).
func formFields(body []byte) []any {
	var attrs []any
	for pair := range strings.SplitSeq(string(body), "&") {
		k, v, _ := strings.Cut(pair, "=")
		k, _ = url.QueryUnescape(k)
		v, _ = url.QueryUnescape(v)
		attrs = append(attrs, slog.String(k, v))
	}
	return attrs
}

func answer(w http.ResponseWriter, status, code int, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": code, "description": description}) //nolint:errcheck,errchkjson // the status is sent: a failed write means the client left
}
