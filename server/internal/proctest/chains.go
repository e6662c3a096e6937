package proctest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// WriteChains writes a chain list, as COFFER_CHAINS_FILE reads it, to dir/chains.json and
// returns the file's path.
func WriteChains(dir string, chains ...map[string]any) (string, error) {
	b, err := json.Marshal(chains)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "chains.json")
	return path, os.WriteFile(path, b, 0o600)
}

// ChainsFile is WriteChains to a temporary directory of the test.
func ChainsFile(t testing.TB, chains ...map[string]any) string {
	t.Helper()
	path, err := WriteChains(t.TempDir(), chains...)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
