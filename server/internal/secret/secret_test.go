package secret

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	box, err := NewBox(Random(KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealed := box.Seal([]byte("sk_abc"), "operator:1")
	if bytes.Contains(sealed, []byte("sk_abc")) {
		t.Fatal("plaintext visible in sealed value")
	}
	got, err := box.Open(sealed, "operator:1")
	if err != nil || string(got) != "sk_abc" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := box.Open(sealed, "operator:2"); err == nil {
		t.Fatal("opened under another context")
	}
	other, _ := NewBox(Random(KeySize))
	if _, err := other.Open(sealed, "operator:1"); err == nil {
		t.Fatal("opened under another master key")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := box.Open(sealed, "operator:1"); err == nil {
		t.Fatal("opened a tampered value")
	}
	if _, err := box.Open([]byte{1, 2}, "x"); err == nil {
		t.Fatal("opened a short value")
	}
}

func TestParseMasterKey(t *testing.T) {
	t.Parallel()
	hexKey := NewMasterKey()
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{hexKey, true},
		{"  " + hexKey + "\n", true},
		{"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", true},
		{"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", true},
		{"short", false},
		{strings.Repeat("ab", 31), false},
	} {
		_, err := ParseMasterKey(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseMasterKey(%q): err=%v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestTokenAndDigest(t *testing.T) {
	t.Parallel()
	a, b := Token("sk_"), Token("sk_")
	if a == b || !strings.HasPrefix(a, "sk_") || len(a) != 3+64 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if bytes.Equal(Digest(a), Digest(b)) || len(Digest(a)) != 32 {
		t.Fatal("digests")
	}
	if !Equal(a, a) || Equal(a, b) {
		t.Fatal("Equal")
	}
}

func TestKeyring(t *testing.T) {
	t.Parallel()
	oldKey, newKey, otherKey := Random(KeySize), Random(KeySize), Random(KeySize)
	oldBox, _ := NewBox(oldKey)
	both, err := NewBox(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	newOnly, _ := NewBox(newKey)
	other, _ := NewBox(otherKey)
	if both.PrimaryID() != KeyID(newKey) || len(both.KeyIDs()) != 2 || both.KeyIDs()[1] != KeyID(oldKey) {
		t.Fatalf("ids: %s %v", both.PrimaryID(), both.KeyIDs())
	}
	if dup, _ := NewBox(newKey, newKey, oldKey); len(dup.KeyIDs()) != 2 {
		t.Fatalf("a key given twice is held once: %v", dup.KeyIDs())
	}
	if len(KeyID(newKey)) != 16 || KeyID(newKey) == KeyID(oldKey) || strings.Contains(hex.EncodeToString(newKey), KeyID(newKey)) {
		t.Fatalf("KeyID %s", KeyID(newKey))
	}

	underOld := oldBox.Seal([]byte("s1"), "ctx")
	underNew := both.Seal([]byte("s2"), "ctx")
	legacy := SealV1ForTest(oldKey, []byte("s3"), "ctx")
	for _, tc := range []struct {
		name   string
		box    *Box
		sealed []byte
		want   string // "" = refused
	}{
		{"old key opens its own", oldBox, underOld, "s1"},
		{"old key cannot open the new key's", oldBox, underNew, ""},
		{"both open the old key's", both, underOld, "s1"},
		{"both open the new key's", both, underNew, "s2"},
		{"both open version 1", both, legacy, "s3"},
		{"old key opens version 1", oldBox, legacy, "s3"},
		{"new key alone refuses the old key's", newOnly, underOld, ""},
		{"new key alone refuses version 1 of the old", newOnly, legacy, ""},
		{"another key refuses", other, underNew, ""},
	} {
		got, err := tc.box.Open(tc.sealed, "ctx")
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: opened %q", tc.name, got)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %q %v", tc.name, got, err)
		}
	}
	if _, err := newOnly.Open(underOld, "ctx"); err == nil || !strings.Contains(err.Error(), KeyID(oldKey)) {
		t.Errorf("the refusal names the missing key: %v", err)
	}

	// Key ids and the SQL header.
	if SealedKeyID(underNew) != KeyID(newKey) || SealedKeyID(legacy) != "" {
		t.Errorf("SealedKeyID: %q %q", SealedKeyID(underNew), SealedKeyID(legacy))
	}
	if h, err := SealedHeader(KeyID(newKey)); err != nil || !bytes.HasPrefix(underNew, h) || bytes.HasPrefix(underOld, h) {
		t.Errorf("SealedHeader: %x %v", h, err)
	}
	if _, err := SealedHeader("zz"); err == nil {
		t.Error("SealedHeader of a bad id")
	}
	if !both.Current(underNew) || both.Current(underOld) || both.Current(legacy) {
		t.Error("Current")
	}
	re, err := both.Reseal(legacy, "ctx")
	if err != nil || !both.Current(re) {
		t.Fatalf("Reseal: %v", err)
	}
	if got, err := newOnly.Open(re, "ctx"); err != nil || string(got) != "s3" {
		t.Errorf("resealed value under the new key alone: %q %v", got, err)
	}

	// The header is authenticated: a value relabelled with another key id does not open.
	forged := bytes.Clone(underNew)
	copy(forged[1:9], mustHeader(t, KeyID(oldKey))[1:])
	if _, err := both.Open(forged, "ctx"); err == nil {
		t.Error("opened a relabelled value")
	}
}

func mustHeader(t *testing.T, id string) []byte {
	t.Helper()
	h, err := SealedHeader(id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
