// Package pagetoken is the one page-token format of every paged list: the opaque base64url
// of a versioned JSON payload naming the list and the last row of the previous page. A token
// from another list, another version or no list at all is INVALID_ARGUMENT on "pageToken".
// Tokens are short-lived cursors, not stored: changing the format only rejects those in flight.
package pagetoken

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cofferhq/coffer/server/internal/fault"
)

// version is the payload's format; a token of another version is refused.
const version = 1

// maxLen bounds what is decoded at all: real tokens are about 120 characters.
const maxLen = 512

// TimeID is the cursor of a list ordered by (time, UUID), newest first: withdrawals, dead
// letters.
type TimeID struct {
	At time.Time
	ID string
}

// Seq is the cursor of a list ordered by a positive integer id, newest first: deposits, reorgs.
type Seq int64

// Position is the cursor of a feed ordered by (transaction id, UUID), oldest first: the event
// feed. Its zero Tx with the nil UUID is the feed's start.
type Position struct {
	Tx uint64
	ID string
}

// Cursor is a list's last row.
type Cursor interface{ TimeID | Seq | Position }

// payload is what a token carries.
type payload struct {
	V    int    `json:"v"`
	List string `json:"l"`
	At   int64  `json:"t,omitempty"` // Unix microseconds: the database's precision
	ID   string `json:"i,omitempty"`
	Seq  int64  `json:"s,omitempty"`
	Tx   uint64 `json:"x,omitempty"`
}

// Invalid is the error of a token that is not one this service gave for the list.
func Invalid() *fault.Error {
	return fault.Invalid("pageToken", "is not a page token from a previous response")
}

// Encode is the token of list's page after c.
func Encode[C Cursor](list string, c C) string {
	p := payload{V: version, List: list}
	switch c := any(c).(type) {
	case TimeID:
		p.At, p.ID = c.At.UnixMicro(), c.ID
	case Seq:
		p.Seq = int64(c)
	case Position:
		p.Tx, p.ID = c.Tx, c.ID
	}
	b, err := json.Marshal(p)
	if err != nil {
		// A struct of strings and integers always marshals; failing here is a programming error.
		panic("pagetoken: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads a token Encode gave for list; anything else is Invalid.
func Decode[C Cursor](list, token string) (C, error) {
	var zero C
	if token == "" || len(token) > maxLen {
		return zero, Invalid()
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return zero, Invalid()
	}
	var p payload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || dec.More() || p.V != version || p.List != list {
		return zero, Invalid()
	}
	var out C
	switch c := any(&out).(type) {
	case *TimeID:
		if _, err := uuid.Parse(p.ID); err != nil || p.At == 0 || p.Seq != 0 || p.Tx != 0 {
			return zero, Invalid()
		}
		*c = TimeID{At: time.UnixMicro(p.At), ID: p.ID}
	case *Seq:
		if p.Seq <= 0 || p.ID != "" || p.At != 0 || p.Tx != 0 {
			return zero, Invalid()
		}
		*c = Seq(p.Seq)
	case *Position:
		if _, err := uuid.Parse(p.ID); err != nil || p.At != 0 || p.Seq != 0 {
			return zero, Invalid()
		}
		*c = Position{Tx: p.Tx, ID: strings.ToLower(p.ID)}
	}
	return out, nil
}
