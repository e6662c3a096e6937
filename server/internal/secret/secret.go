// Package secret seals data under the master key (AES-256-GCM), mints random credentials and
// digests them for storage. Sealed values are bound to a context string (for example the
// owning row's id) so a ciphertext cannot be moved to another row. Each sealed value names the
// master key that sealed it, and a Box may hold several keys, so the master key can be
// rotated while the service runs (see package custody).
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
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

// Sealed value formats. Version 1 (before master-key rotation existed) is version byte, nonce,
// ciphertext+tag. Version 2 adds the id of the master key that sealed it, so a process holding
// several keys during a rotation opens each value with the right one, and `coffer keys
// rotate-master` finds what is left to re-seal with a plain comparison in SQL.
const (
	sealV1 = 1
	sealV2 = 2
	// keyIDSize is the length of a master key id inside a sealed value.
	keyIDSize = 8
	// headerSize is version byte + key id of a version-2 value.
	headerSize = 1 + keyIDSize
)

// Box seals values under its primary master key and opens values sealed under any of its keys:
// during a master-key rotation a process holds the new key (primary) and the previous one.
type Box struct {
	primary boxKey
	keys    []boxKey // primary first
}

type boxKey struct {
	id   [keyIDSize]byte
	aead cipher.AEAD
}

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

// KeyID names a master key without revealing it: 16 hex characters of an HMAC of a fixed
// label under the key. It is stored in every value the key seals and shown in logs.
func KeyID(key []byte) string {
	id := keyID(key)
	return hex.EncodeToString(id[:])
}

func keyID(key []byte) (id [keyIDSize]byte) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("coffer master key id v1"))
	copy(id[:], m.Sum(nil))
	return id
}

// NewBox returns a Box that seals under primary and also opens values sealed under others
// (previous master keys, while a rotation is under way). Every key is 32 bytes.
func NewBox(primary []byte, others ...[]byte) (*Box, error) {
	b := &Box{}
	for i, key := range append([][]byte{primary}, others...) {
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
		k := boxKey{id: keyID(key), aead: aead}
		if i > 0 && b.has(k.id) {
			continue // the same key given twice
		}
		b.keys = append(b.keys, k)
	}
	b.primary = b.keys[0]
	return b, nil
}

func (b *Box) has(id [keyIDSize]byte) bool {
	for _, k := range b.keys {
		if k.id == id {
			return true
		}
	}
	return false
}

// PrimaryID is the KeyID of the key new values are sealed under.
func (b *Box) PrimaryID() string { return hex.EncodeToString(b.primary.id[:]) }

// KeyIDs are the KeyIDs of every key the Box opens with, primary first.
func (b *Box) KeyIDs() []string {
	out := make([]string, len(b.keys))
	for i, k := range b.keys {
		out[i] = hex.EncodeToString(k.id[:])
	}
	return out
}

// SealedHeader is the prefix of every value sealed under the key named by id (a KeyID): the
// rotation selects what is not yet sealed under the new key by comparing it in SQL.
func SealedHeader(id string) ([]byte, error) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != keyIDSize {
		return nil, fmt.Errorf("secret: %q is not a master key id", id)
	}
	return append([]byte{sealV2}, raw...), nil
}

// SealedKeyID is the KeyID a value was sealed under, or "" for a version-1 value (sealed
// before values named their key) or a malformed one.
func SealedKeyID(sealed []byte) string {
	if len(sealed) < headerSize || sealed[0] != sealV2 {
		return ""
	}
	return hex.EncodeToString(sealed[1:headerSize])
}

// Seal encrypts plaintext bound to context under the primary key: version byte, key id, nonce,
// ciphertext+tag. The header is authenticated with the context.
func (b *Box) Seal(plaintext []byte, context string) []byte {
	nonce := Random(b.primary.aead.NonceSize())
	out := make([]byte, 0, headerSize+len(nonce)+len(plaintext)+b.primary.aead.Overhead())
	out = append(append(out, sealV2), b.primary.id[:]...)
	aad := append(append([]byte{}, out...), context...)
	out = append(out, nonce...)
	return b.primary.aead.Seal(out, nonce, plaintext, aad)
}

// Open decrypts a sealed value; it fails if the value or its context was tampered with, or if
// it was sealed under a master key the Box does not hold.
func (b *Box) Open(sealed []byte, context string) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, errors.New("secret: malformed sealed value")
	}
	switch sealed[0] {
	case sealV1:
		// No key id: try each key (only values sealed before rotation existed).
		for _, k := range b.keys {
			ns := k.aead.NonceSize()
			if len(sealed) < 1+ns+k.aead.Overhead() {
				return nil, errors.New("secret: malformed sealed value")
			}
			if pt, err := k.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], []byte(context)); err == nil {
				return pt, nil
			}
		}
		return nil, errors.New("secret: cannot open sealed value (wrong master key or context)")
	case sealV2:
		if len(sealed) < headerSize {
			return nil, errors.New("secret: malformed sealed value")
		}
		var id [keyIDSize]byte
		copy(id[:], sealed[1:headerSize])
		for _, k := range b.keys {
			if k.id != id {
				continue
			}
			ns := k.aead.NonceSize()
			if len(sealed) < headerSize+ns+k.aead.Overhead() {
				return nil, errors.New("secret: malformed sealed value")
			}
			aad := append(append([]byte{}, sealed[:headerSize]...), context...)
			pt, err := k.aead.Open(nil, sealed[headerSize:headerSize+ns], sealed[headerSize+ns:], aad)
			if err != nil {
				return nil, errors.New("secret: cannot open sealed value (tampered with, or wrong context)")
			}
			return pt, nil
		}
		return nil, fmt.Errorf("secret: value sealed under master key %x, which this process does not hold (keys: %s); "+
			"during a rotation every process needs the new key and the previous one", id, strings.Join(b.KeyIDs(), ", "))
	}
	return nil, errors.New("secret: malformed sealed value")
}

// Current reports whether a value is sealed under the primary key (nothing to re-seal).
func (b *Box) Current(sealed []byte) bool {
	return len(sealed) >= headerSize && sealed[0] == sealV2 && [keyIDSize]byte(sealed[1:headerSize]) == b.primary.id
}

// Reseal opens a value with any key and seals it again under the primary key.
func (b *Box) Reseal(sealed []byte, context string) ([]byte, error) {
	pt, err := b.Open(sealed, context)
	if err != nil {
		return nil, err
	}
	defer clear(pt)
	return b.Seal(pt, context), nil
}

// SealV1ForTest seals in the version-1 format (no key id), as Coffer did before master-key
// rotation: tests of the rotation use it to make rows a database of that time holds.
func SealV1ForTest(key, plaintext []byte, context string) []byte {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	nonce := Random(aead.NonceSize())
	return aead.Seal(append([]byte{sealV1}, nonce...), nonce, plaintext, []byte(context))
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
