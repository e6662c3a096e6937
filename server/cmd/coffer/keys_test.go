package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/custody"
	"github.com/cofferhq/coffer/server/internal/custody/custodytest"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// runMainEnv makes the test binary run `coffer` itself (TestMain): tests start it as a real
// process they can kill.
const runMainEnv = "COFFER_TEST_RUN_MAIN"

// cofferProcess starts `coffer args...` as a child process with env added to the test's.
func cofferProcess(t *testing.T, env []string, args ...string) (*exec.Cmd, io.ReadCloser, *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...) // killed at the end of the test, as the cleanup does
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &bytes.Buffer{}
	cmd.Stdout = out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) //nolint:errcheck
	return cmd, stderr, out
}

// runCoffer runs `coffer args...` as a child process to its end.
func runCoffer(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd, errPipe, out := cofferProcess(t, env, args...)
	b, _ := io.ReadAll(errPipe)
	err = cmd.Wait()
	return out.String(), string(b), err
}

// TestRotateMasterKilledHalfway: `coffer keys rotate-master`, a real process, is killed with
// SIGKILL in the middle of re-sealing a value (its UPDATE done, not committed). Every secret
// then opens, through the code that uses it, with the keys the running service holds during a
// rotation (new and previous), each value under exactly one of them; a second run finishes;
// after it the new key alone opens everything and the old one nothing. Once with keys given
// directly, once with KMS-wrapped keys (gocloud's local keeper), switching KMS key.
func TestRotateMasterKilledHalfway(t *testing.T) {
	t.Parallel()
	const operators, killAfter = 8, 5
	total := custodytest.Values(operators)
	for _, tc := range []struct {
		name string
		// setup returns the sources the service had, and prepares those it moves to.
		setup func(t *testing.T, dbURL string, pool *pgxpool.Pool) (before, during custody.Sources, env []string)
	}{
		{"keys in the environment", func(t *testing.T, dbURL string, pool *pgxpool.Pool) (custody.Sources, custody.Sources, []string) {
			t.Helper()
			oldKey, newKey := secret.Random(secret.KeySize), secret.Random(secret.KeySize)
			before := custody.Sources{Primary: custody.Source{Key: oldKey}}
			during := custody.Sources{Primary: custody.Source{Key: newKey}, Previous: custody.Source{Key: oldKey}}
			return before, during, []string{"COFFER_MASTER_KEY=" + hex.EncodeToString(newKey), "COFFER_MASTER_KEY_PREVIOUS=" + hex.EncodeToString(oldKey)}
		}},
		{"KMS, moving to another KMS key", func(t *testing.T, dbURL string, pool *pgxpool.Pool) (custody.Sources, custody.Sources, []string) {
			t.Helper()
			kmsA, kmsB := localKMS(), localKMS()
			before := custody.Sources{Primary: custody.Source{URL: kmsA}}
			if _, err := custody.OpenBox(context.Background(), pool, before); err != nil { // the first process creates the key
				t.Fatal(err)
			}
			// The on-call step before deploying: a master key wrapped by the new KMS key.
			out, errOut, err := runCoffer(t, []string{"DATABASE_URL=" + dbURL}, "keys", "new-master", "--kms-url", kmsB)
			if err != nil || !strings.Contains(out, "stored, wrapped by the KMS") {
				t.Fatalf("new-master: %v\n%s%s", err, out, errOut)
			}
			during := custody.Sources{Primary: custody.Source{URL: kmsB}, Previous: custody.Source{URL: kmsA}}
			return before, during, []string{"COFFER_MASTER_KEY_URL=" + kmsB, "COFFER_MASTER_KEY_PREVIOUS_URL=" + kmsA}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := testdb.URL(t)
			pool := testdb.Open(t, dbURL, 4)
			// The service ran under the first master key (one value of every kind sealed under
			// the old key itself is in the version-1 format of before key ids when the key is
			// given directly).
			before, during, env := tc.setup(t, dbURL, pool)
			oldBox, err := custody.OpenBox(ctx, pool, before)
			if err != nil {
				t.Fatal(err)
			}
			f := custodytest.Populate(t, pool, oldBox, operators, before.Primary.Key)
			env = append(env, "DATABASE_URL="+dbURL)
			// What the replicas hold during the rotation, and after it.
			both, err := custody.OpenBox(ctx, pool, during)
			if err != nil {
				t.Fatal(err)
			}
			newOnly, err := custody.OpenBox(ctx, pool, custody.Sources{Primary: during.Primary})
			if err != nil {
				t.Fatal(err)
			}
			newID := both.PrimaryID()

			// First run: paused inside the transaction of value killAfter+1, then SIGKILLed.
			cmd, stderr, _ := cofferProcess(t, append(env, fmt.Sprintf("COFFER_FAILPOINT=reseal-pause:%d", killAfter)), "keys", "rotate-master")
			paused := make(chan struct{})
			var errOut strings.Builder
			var mu sync.Mutex
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					mu.Lock()
					errOut.WriteString(sc.Text() + "\n")
					mu.Unlock()
					if sc.Text() == failpointPaused {
						close(paused)
					}
				}
			}()
			select {
			case <-paused:
			case <-time.After(60 * time.Second):
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("rotate-master never reached its failpoint:\n%s", errOut.String())
			}
			// Online: while it holds a value's row mid-update, the service opens everything.
			if err := f.Check(both); err != nil {
				t.Fatalf("during the rotation: %v", err)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("rotate-master was not killed: %v", err)
			}

			// Half done: exactly the committed values are under the new key, the rest under the
			// old one; the service's keys open all of it, neither key alone does.
			st, err := custody.ReadStatus(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			if pending := st.Pending(newID); pending != total-killAfter {
				t.Fatalf("after the kill %d values are not under the new key, want %d: %+v", pending, total-killAfter, st.Columns)
			}
			if err := f.Check(both); err != nil {
				t.Fatalf("after the kill, with the new and previous keys: %v", err)
			}
			if f.Check(newOnly) == nil || f.Check(oldBox) == nil {
				t.Fatal("after the kill one key alone opens every secret: the rotation was not half done")
			}

			// Second run: finishes.
			out, errText, err := runCoffer(t, env, "keys", "rotate-master")
			if err != nil {
				t.Fatalf("second run: %v\n%s%s", err, out, errText)
			}
			if want := fmt.Sprintf("done: %d values re-sealed by this run; every secret is sealed under master key %s.", total-killAfter, newID); !strings.Contains(out, want) {
				t.Fatalf("second run said:\n%s\nwant %q", out, want)
			}
			if err := f.Check(newOnly); err != nil {
				t.Fatalf("after the rotation, the new key alone: %v", err)
			}
			if err := f.Check(oldBox); err == nil {
				t.Fatal("after the rotation the old key still opens the secrets")
			}
			if before.Primary.URL != "" {
				// The old master key is gone from the database: the old KMS key unwraps nothing.
				if _, err := custody.OpenBox(ctx, pool, before); err == nil {
					t.Fatal("the old KMS key still unwraps a master key")
				}
			}
			// `coffer keys status` agrees.
			out, _, err = runCoffer(t, env, "keys", "status")
			if err != nil || !strings.Contains(out, fmt.Sprintf("values not yet under %s: 0", newID)) {
				t.Fatalf("status: %v\n%s", err, out)
			}
		})
	}
}

func localKMS() string { return "base64key://" + base64.URLEncoding.EncodeToString(secret.Random(32)) }

func TestKeysNewMasterAndUsage(t *testing.T) {
	t.Parallel()
	out, _, code := coffer(t, "keys", "new-master")
	line, _, _ := strings.Cut(out, "\n")
	raw, err := secret.ParseMasterKey(strings.TrimPrefix(line, "COFFER_MASTER_KEY="))
	if code != 0 || err != nil || !strings.Contains(out, "key id "+secret.KeyID(raw)) || !strings.Contains(out, "COFFER_MASTER_KEY_PREVIOUS") {
		t.Fatalf("new-master: %d %v\n%s", code, err, out)
	}
	for _, args := range [][]string{{"keys"}, {"keys", "rotate"}, {"keys", "status", "extra"}} {
		if _, errOut, code := coffer(t, args...); code != 2 || !strings.Contains(errOut, "coffer keys") {
			t.Errorf("%v: %d %s", args, code, errOut)
		}
	}
}
