package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com).
const (
	// HeaderID is the event id: the same on every attempt of one event, so receivers can
	// deduplicate on it.
	HeaderID = "webhook-id"
	// HeaderTimestamp is the attempt's time in Unix seconds.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature is a space-separated list of "v1,<base64 signature>", one per valid
	// operator key (several while a key rotation is in progress).
	HeaderSignature = "webhook-signature"
)

// Tolerance is how far a timestamp may be from the receiver's clock, in either direction.
const Tolerance = 5 * time.Minute

// Verification errors; Verify wraps them with details.
var (
	// ErrMissingHeader: a webhook-id, webhook-timestamp or webhook-signature header is absent.
	ErrMissingHeader = errors.New("webhook: missing signature header")
	// ErrTimestamp: the timestamp is malformed or more than Tolerance away from now.
	ErrTimestamp = errors.New("webhook: timestamp outside the tolerance")
	// ErrSignature: no listed signature matches the key.
	ErrSignature = errors.New("webhook: no matching signature")
)

func mac(key []byte, id, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Sign returns the webhook-signature header value for an event id, timestamp and body:
// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" for each key, newest first,
// space-separated. The key is the operator key's bytes ([]byte("sk_...")).
func Sign(keys [][]byte, id string, ts time.Time, body []byte) string {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac(k, id, stamp, body))
	}
	return strings.Join(sigs, " ")
}

// Headers returns the three signature headers of one delivery attempt.
func Headers(keys [][]byte, id string, ts time.Time, body []byte) http.Header {
	h := make(http.Header, 3)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Sign(keys, id, ts, body))
	return h
}

// Verify checks a webhook's signature headers against the body and the operator key
// ([]byte("sk_...")): the timestamp must be within Tolerance of now (older replays and
// far-future stamps are refused) and one of the listed v1 signatures must match, compared
// in constant time. Errors wrap ErrMissingHeader, ErrTimestamp or ErrSignature.
func Verify(header http.Header, body []byte, key []byte, now time.Time) error {
	return verify(header, body, key, now, Tolerance)
}

func verify(header http.Header, body []byte, key []byte, now time.Time, tolerance time.Duration) error {
	if len(key) == 0 {
		return fmt.Errorf("%w: empty key", ErrSignature)
	}
	id, stamp, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	for i, v := range []string{id, stamp, sigs} {
		if v == "" {
			return fmt.Errorf("%w %s", ErrMissingHeader, []string{HeaderID, HeaderTimestamp, HeaderSignature}[i])
		}
	}
	secs, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || secs < 0 || stamp[0] == '+' {
		return fmt.Errorf("%w: malformed %s %q", ErrTimestamp, HeaderTimestamp, stamp)
	}
	at := time.Unix(secs, 0)
	if d := now.Sub(at); d > tolerance {
		return fmt.Errorf("%w: signed %s ago", ErrTimestamp, d.Truncate(time.Second))
	} else if -d > tolerance {
		return fmt.Errorf("%w: signed %s in the future", ErrTimestamp, (-d).Truncate(time.Second))
	}
	want := mac(key, id, stamp, body)
	for s := range strings.FieldsSeq(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}
