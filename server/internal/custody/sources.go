// Package custody looks after the master key: where it comes from (the environment, a file,
// or a KMS through gocloud.dev/secrets), which processes hold which master keys, and `coffer
// keys rotate-master`, which re-seals every secret under a new master key while the service
// runs.
//
// Every sealed value names the master key that sealed it (secret.KeyID). During a rotation
// each process seals under the new key and opens with the new and the previous one; the
// rotation re-seals value by value, each in its own transaction, so it can be killed at any
// point and run again: every value is always sealed under one of the two keys.
package custody

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cofferhq/coffer/server/internal/secret"
)

// Source is where one master key comes from: a key given directly (COFFER_MASTER_KEY, or a
// file named by COFFER_MASTER_KEY_FILE), or a KMS (COFFER_MASTER_KEY_URL) that unwraps the
// master keys stored in PostgreSQL.
type Source struct {
	Key []byte
	URL string
}

// IsZero reports an unset source.
func (s Source) IsZero() bool { return len(s.Key) == 0 && s.URL == "" }

// Sources are the master key that seals, and the one a rotation moves away from (opened only).
type Sources struct {
	Primary  Source
	Previous Source
}

// The settings of each source.
const (
	EnvKey          = "COFFER_MASTER_KEY"
	EnvKeyFile      = "COFFER_MASTER_KEY_FILE"
	EnvKeyURL       = "COFFER_MASTER_KEY_URL"
	EnvPrevious     = "COFFER_MASTER_KEY_PREVIOUS"
	EnvPreviousFile = "COFFER_MASTER_KEY_PREVIOUS_FILE"
	EnvPreviousURL  = "COFFER_MASTER_KEY_PREVIOUS_URL"
)

// SourcesFromEnv reads the master key settings: exactly one of COFFER_MASTER_KEY,
// COFFER_MASTER_KEY_FILE and COFFER_MASTER_KEY_URL, and at most one of their _PREVIOUS
// counterparts. A missing or conflicting setting is an error naming the variables.
func SourcesFromEnv(getenv func(string) string) (Sources, error) {
	primary, err := sourceFromEnv(getenv, EnvKey, EnvKeyFile, EnvKeyURL)
	if err == nil && primary.IsZero() {
		err = fmt.Errorf("a master key is required: set one of %s (generate one with `coffer keygen`), %s or %s", EnvKey, EnvKeyFile, EnvKeyURL)
	}
	previous, perr := sourceFromEnv(getenv, EnvPrevious, EnvPreviousFile, EnvPreviousURL)
	return Sources{Primary: primary, Previous: previous}, errors.Join(err, perr)
}

// SourceFromEnv reads one master key from the named variables (key, file, URL), zero when
// none is set.
func sourceFromEnv(getenv func(string) string, keyVar, fileVar, urlVar string) (Source, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	var set []string
	for _, name := range []string{keyVar, fileVar, urlVar} {
		if get(name) != "" {
			set = append(set, name)
		}
	}
	if len(set) > 1 {
		return Source{}, fmt.Errorf("%s are set together: set exactly one", strings.Join(set, " and "))
	}
	if len(set) == 0 {
		return Source{}, nil
	}
	switch v := get(set[0]); set[0] {
	case keyVar:
		k, err := secret.ParseMasterKey(v)
		if err != nil {
			return Source{}, fmt.Errorf("%s: %w", keyVar, err)
		}
		return Source{Key: k}, nil
	case fileVar:
		k, err := ReadKeyFile(v)
		if err != nil {
			return Source{}, fmt.Errorf("%s: %w", fileVar, err)
		}
		return Source{Key: k}, nil
	default:
		if !strings.Contains(v, "://") {
			return Source{}, fmt.Errorf("%s: %q is not a URL such as awskms://…, gcpkms://…, azurekeyvault://…, hashivault://… or base64key://…", urlVar, v)
		}
		return Source{URL: v}, nil
	}
}

// ReadKeyFile reads a master key file: the key in hex or base64 (surrounding white space is
// ignored, as a mounted secret often ends with a newline), or its 32 raw bytes.
func ReadKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	defer clear(b)
	if k, err := secret.ParseMasterKey(string(b)); err == nil {
		return k, nil
	}
	if len(b) == secret.KeySize {
		return append([]byte(nil), b...), nil
	}
	return nil, errors.New("the file must hold a 32-byte key: 64 hex characters, base64, or the 32 raw bytes")
}
