package admin

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // RFC 6238 TOTP, as authenticator apps compute it, is HMAC-SHA1
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"net/url"
	"time"
)

// TOTP (RFC 6238): HMAC-SHA1, 6 digits, 30-second steps, one step of clock skew accepted.
const totpStep = 30

func totpEncoding() *base32.Encoding { return base32.StdEncoding.WithPadding(base32.NoPadding) }

func totpCode(secret []byte, counter uint64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], counter)
	mac := hmac.New(sha1.New, secret)
	mac.Write(msg[:])
	sum := mac.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	return fmt.Sprintf("%06d", v%1_000_000)
}

// MatchTOTP checks a code against the steps around now and returns the step it belongs to,
// which the caller records so that the code cannot be used again (see store.UseTOTPStep).
// Every candidate is compared, in constant time.
func MatchTOTP(secret []byte, code string, now time.Time) (step uint64, ok bool) {
	current := uint64(now.Unix() / totpStep) //nolint:gosec // now is after 1970
	for _, c := range []uint64{current - 1, current, current + 1} {
		eq := subtle.ConstantTimeCompare([]byte(totpCode(secret, c)), []byte(code))
		step = uint64(subtle.ConstantTimeSelect(eq, int(c), int(step))) //nolint:gosec // steps are about 2^26
		ok = ok || eq == 1
	}
	return step, ok
}

// TOTPURI is the otpauth:// URI authenticator apps enrol from.
func TOTPURI(secret []byte, email string) string {
	v := url.Values{}
	v.Set("secret", totpEncoding().EncodeToString(secret))
	v.Set("issuer", "Coffer")
	v.Set("algorithm", "SHA1")
	v.Set("digits", "6")
	v.Set("period", "30")
	return "otpauth://totp/" + url.PathEscape("Coffer:"+email) + "?" + v.Encode()
}
