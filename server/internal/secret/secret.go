// Package secret seals data under the master key (AES-256-GCM), mints random credentials and
// digests them for storage. Sealed values are bound to a context string (for example the
// owning row's id) so a ciphertext cannot be moved to another row.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the master key length: 32 bytes (AES-256).
const KeySize = 32

const sealVersion = 1

// Box seals and opens values under the master key.
type Box struct{ aead cipher.AEAD }

// ParseMasterKey accepts 32 bytes written as 64 hex characters or standard/URL base64.
func ParseMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, errors.New("master key must be 32 bytes, as 64 hex characters or base64")
}

// NewMasterKey returns a fresh master key in hex.
func NewMasterKey() string { return hex.EncodeToString(Random(KeySize)) }

// NewBox returns a Box for a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("master key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext bound to context: version byte, nonce, ciphertext+tag.
func (b *Box) Seal(plaintext []byte, context string) []byte {
	nonce := Random(b.aead.NonceSize())
	out := append([]byte{sealVersion}, nonce...)
	return b.aead.Seal(out, nonce, plaintext, []byte(context))
}

// Open decrypts a sealed value; it fails if the value or its context was tampered with.
func (b *Box) Open(sealed []byte, context string) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns+b.aead.Overhead() || sealed[0] != sealVersion {
		return nil, errors.New("secret: malformed sealed value")
	}
	pt, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], []byte(context))
	if err != nil {
		return nil, errors.New("secret: cannot open sealed value (wrong master key or context)")
	}
	return pt, nil
}

// Random returns n bytes from the system CSPRNG.
func Random(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("secret: system random source failed: " + err.Error())
	}
	return b
}

// Token returns prefix followed by 32 random bytes in hex, e.g. "sk_3f9a…".
func Token(prefix string) string { return prefix + hex.EncodeToString(Random(32)) }

// Digest is the SHA-256 of a credential, the form in which credentials are stored and looked up.
func Digest(credential string) []byte {
	d := sha256.Sum256([]byte(credential))
	return d[:]
}

// Equal compares two credentials in constant time.
func Equal(a, b string) bool {
	da, db := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(da[:], db[:]) == 1
}
