// Package envelope writes the spec's REST response wrapper: {"status":"success"|"error",
// "message":…,"data":…}. The REST layer (legacy) and `coffer dev`'s /dev/pay answer in it.
package envelope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strconv"

	"github.com/cofferhq/coffer/server/internal/fault"
)

// Body is the spec's response wrapper of the operator and session endpoints.
type Body struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// JSON writes v with status, HTML left unescaped and never cached.
func JSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"status":"error","message":"internal error","data":{"code":"INTERNAL"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck
}

// Success writes the success envelope.
func Success(w http.ResponseWriter, message string, data any) {
	JSON(w, http.StatusOK, Body{Status: "success", Message: message, Data: data})
}

// Error writes the error envelope: {"status":"error","message":...,"data":{"code":...}}.
// It returns the HTTP status written.
func Error(ctx context.Context, w http.ResponseWriter, log *slog.Logger, err error) int {
	if errors.Is(err, context.Canceled) {
		err = fault.New(fault.Unavailable, "request cancelled")
	}
	fe := fault.As(err)
	switch {
	case fe.Code == fault.Internal:
		log.ErrorContext(ctx, "request failed", "error", err)
	case fe.Code == fault.Unavailable && fe.Cause != nil:
		log.WarnContext(ctx, "request failed: a dependency is down", "error", fe.Cause)
	}
	data := map[string]any{"code": fe.Code.String()}
	if fe.Field != "" {
		data["field"] = fe.Field
	}
	maps.Copy(data, fe.Details)
	if fe.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(fe.RetryAfter))
	}
	status := fe.Code.HTTPStatus()
	JSON(w, status, Body{Status: "error", Message: fe.Message, Data: data})
	return status
}
