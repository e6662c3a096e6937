package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// TestRiverSchema: the River migrations sqlc checks statements against (river/) are those of
// the River version in go.mod, which Migrate applies. After a River upgrade that adds or
// changes one, copy them again and regenerate:
//
//	cp "$(go list -m -f '{{.Dir}}' github.com/riverqueue/river/riverdriver/riverpgxv5)"/migration/main/*.up.sql server/internal/store/river/
//	chmod u+w server/internal/store/river/*; .tools/sqlc generate -f server/internal/store/dbsqlc/sqlc.yaml
func TestRiverSchema(t *testing.T) {
	t.Parallel()
	migrator, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("river/*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	versions := migrator.AllVersions()
	if len(files) != len(versions) {
		t.Fatalf("river/ holds %d migrations, River has %d: copy them again (see the test's comment)", len(files), len(versions))
	}
	for i, v := range versions {
		b, err := os.ReadFile(files[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%03d_", v.Version); !strings.HasPrefix(filepath.Base(files[i]), want) || string(b) != v.SQLUp {
			t.Errorf("%s is not River's migration %d (%s): copy them again (see the test's comment)", files[i], v.Version, v.Name)
		}
	}
}
