package secret

import (
	"bytes"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
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
