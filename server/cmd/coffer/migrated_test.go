package main

import (
	"bufio"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/testdb"
)

// TestCommandsRefuseAnUnmigratedDatabase: on a database whose schema is behind this binary
// (empty, or a migration short after an upgrade) the commands on the service layer refuse,
// naming `coffer migrate`, and change nothing; `coffer serve` waits for the migration before
// it runs anything. Before, a server started its workers on the old schema (their jobs failing
// against tables not there yet), `operator create` wrote, and an empty database answered raw
// SQL errors ("relation \"wallet_seed\" does not exist").
func TestCommandsRefuseAnUnmigratedDatabase(t *testing.T) {
	for _, tc := range []struct{ name, sql, migrated string }{
		{"empty database", "DROP SCHEMA public CASCADE; CREATE SCHEMA public", ""},
		// The migrate Job's end is its record coming back (the migration itself is left applied).
		{"one migration behind", "CREATE TABLE last_migration AS SELECT version, name, applied_at FROM coffer_migrations ORDER BY version DESC LIMIT 1; " +
			"DELETE FROM coffer_migrations WHERE version = (SELECT version FROM last_migration)",
			"INSERT INTO coffer_migrations (version, name, applied_at) SELECT version, name, applied_at FROM last_migration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbURL, _ := cliDatabase(t)
			t.Setenv("COFFER_INTERNAL_ADDR", "127.0.0.1:0")
			t.Setenv("COFFER_CHAINS_VALIDATE", "off")
			pool := testdb.Open(t, dbURL, 2)
			if _, err := pool.Exec(t.Context(), tc.sql); err != nil {
				t.Fatal(err)
			}
			operators := func() int {
				if tc.name == "empty database" {
					return 0
				}
				return testdb.Count(t.Context(), t, pool, "SELECT count(*) FROM operators")
			}
			before := operators()
			for _, c := range []struct {
				args []string
				exit int
			}{
				{[]string{"ops", "pauses"}, 1},
				{[]string{"operator", "create", "--name", "Acme", "--webhook-url", "https://acme.example/hooks"}, 1},
				{[]string{"reconcile"}, 3}, // could not check (1 is "short")
			} {
				_, errOut, code := coffer(t, c.args...)
				if code != c.exit || !strings.Contains(errOut, "run `coffer migrate`") {
					t.Errorf("coffer %s: exit %d, %q; want %d naming `coffer migrate`", strings.Join(c.args, " "), code, errOut, c.exit)
				}
			}
			if after := operators(); after != before {
				t.Errorf("operators %d → %d: a refused command wrote", before, after)
			}
			serveWaitsForTheSchema(t, func() {
				if tc.migrated == "" {
					if _, errOut, code := coffer(t, "migrate"); code != 0 {
						t.Fatalf("migrate: %s", errOut)
					}
				} else if _, err := pool.Exec(t.Context(), tc.migrated); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// serveWaitsForTheSchema starts `coffer serve --role worker` on the unmigrated database: it
// says it waits for the schema and starts no worker until migrate has run.
func serveWaitsForTheSchema(t *testing.T, migrate func()) {
	t.Helper()
	_, stderr, _ := cofferProcess(t, nil, "serve", "--role", "worker")
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	await := func(want string) {
		t.Helper()
		for line := range lines {
			if strings.Contains(line, `"workers started"`) && want != `"workers started"` {
				t.Fatalf("workers started on an unmigrated schema: %s", line)
			}
			if strings.Contains(line, want) {
				return
			}
		}
		t.Fatalf("coffer serve ended without logging %s", want)
	}
	await("run `coffer migrate`")
	migrate()
	await(`"workers started"`)
	go func() {
		for range lines { // drain until the process is killed at the test's end
		}
	}()
}
