package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/cofferhq/coffer/server/internal/custody"
	"github.com/cofferhq/coffer/server/internal/secret"
)

// FailpointReseal (tests only): with COFFER_FAILPOINT=reseal-pause:N, `coffer keys
// rotate-master` stops inside the transaction of its (N+1)th value, after the UPDATE and
// before the COMMIT, prints failpointPaused on stderr and waits to be killed.
const (
	failpointReseal = "reseal-pause:"
	failpointPaused = "failpoint reseal-pause: paused"
)

func runKeys(ctx context.Context, args []string, out io.Writer) error {
	const subs = "status, new-master, rotate-master"
	if len(args) == 0 {
		return fmt.Errorf("%w: coffer keys %s [flags]", errUsage, strings.ReplaceAll(subs, ", ", "|"))
	}
	sub, args := args[0], args[1:]
	fs := newEnvFlags("keys " + sub)
	var asJSON *bool
	var kmsURL *string
	switch sub {
	case "status":
		asJSON = fs.Bool("json", false, "print JSON")
	case "new-master":
		kmsURL = fs.String("kms-url", "", "store the new master key in PostgreSQL wrapped by this KMS (gocloud.dev/secrets URL) instead of printing it")
	case "rotate-master":
	default:
		return fmt.Errorf("%w: unknown subcommand %q (%s)", errUsage, sub, subs)
	}
	if err := parse(fs.FlagSet, args); err != nil {
		return err
	}
	if sub == "new-master" && *kmsURL == "" {
		// A key given directly: nothing to store, deploy it as COFFER_MASTER_KEY (or a file).
		key := secret.NewMasterKey()
		raw, _ := secret.ParseMasterKey(key)
		fmt.Fprintf(out, "COFFER_MASTER_KEY=%s\n# key id %s. Deploy it to every replica as the master key, with the current one as "+
			"COFFER_MASTER_KEY_PREVIOUS, then run `coffer keys rotate-master`.\n", key, secret.KeyID(raw))
		return nil
	}
	need := needBox
	if sub == "new-master" {
		need = needDB // the new key is not sealed under the current one: no master key needed
	}
	env, err := openCLIEnv(ctx, *fs.dataDir, need)
	if err != nil {
		return err
	}
	defer env.close()
	switch sub {
	case "new-master":
		id, err := custody.NewKMSKey(ctx, env.pool, *kmsURL)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "master key %s stored, wrapped by the KMS.\nRestart every replica with COFFER_MASTER_KEY_URL set to this KMS "+
			"(and, if it is another KMS key than the current one, the current setting as COFFER_MASTER_KEY_PREVIOUS_URL / _PREVIOUS / _PREVIOUS_FILE), "+
			"then run `coffer keys rotate-master`.\n", id)
		return nil
	case "status":
		return keysStatus(ctx, env, *asJSON, out)
	}
	opts := custody.RotateOptions{Progress: func(column, pk string) { fmt.Fprintf(out, "re-sealed %s %s\n", column, pk) }}
	if fp, ok := strings.CutPrefix(os.Getenv("COFFER_FAILPOINT"), failpointReseal); ok {
		n, err := strconv.Atoi(fp)
		if err != nil {
			return fmt.Errorf("COFFER_FAILPOINT %q: want %sN", os.Getenv("COFFER_FAILPOINT"), failpointReseal)
		}
		opts.Failpoint = func(done int) {
			if done == n {
				fmt.Fprintln(os.Stderr, failpointPaused)
				<-ctx.Done()
			}
		}
	}
	fmt.Fprintf(out, "re-sealing every secret under master key %s (also opening with %s)\n", env.box.PrimaryID(), strings.Join(env.box.KeyIDs()[1:], ", "))
	rep, err := custody.Rotate(ctx, env.pool, env.box, opts)
	if err != nil {
		return fmt.Errorf("%w\n(nothing is lost: every secret is sealed under the old or the new key; run `coffer keys rotate-master` again to finish)", err)
	}
	fmt.Fprintf(out, "done: %d values re-sealed by this run; every secret is sealed under master key %s.\n", rep.Total(), rep.Target)
	for _, id := range rep.DeletedKeys {
		fmt.Fprintf(out, "deleted KMS-wrapped master key %s (nothing is sealed under it any more)\n", id)
	}
	fmt.Fprintln(out, "The previous master key is no longer needed: remove COFFER_MASTER_KEY_PREVIOUS (or _FILE, _URL) at the next deploy.")
	return nil
}

func keysStatus(ctx context.Context, env *cliEnv, asJSON bool, out io.Writer) error {
	st, err := custody.ReadStatus(ctx, env.pool)
	if err != nil {
		return err
	}
	primary := env.box.PrimaryID()
	if asJSON {
		holders := make([]map[string]any, len(st.Holders))
		for i, h := range st.Holders {
			holders[i] = map[string]any{"host": h.Host, "pid": h.PID, "role": h.Role, "sealsWith": h.PrimaryKeyID, "opensWith": h.KeyIDs, "seenAt": h.SeenAt}
		}
		sealed := map[string]map[string]int{}
		for _, c := range st.Columns {
			sealed[c.Column] = c.ByKey
		}
		return json.NewEncoder(out).Encode(map[string]any{"sealsWith": primary, "opensWith": env.box.KeyIDs(),
			"pending": st.Pending(primary), "sealed": sealed, "kmsKeys": st.KMSKeys, "processes": holders})
	}
	fmt.Fprintf(out, "this configuration seals with master key %s and opens with %s\n", primary, strings.Join(env.box.KeyIDs(), ", "))
	fmt.Fprintf(out, "values not yet under %s: %d\n\n", primary, st.Pending(primary))
	tw := newTable(out)
	fmt.Fprintln(tw, "COLUMN\tMASTER KEY\tVALUES")
	for _, c := range st.Columns {
		keys := make([]string, 0, len(c.ByKey))
		for k := range c.ByKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", c.Column, k, c.ByKey[k])
		}
	}
	tw.Flush()
	if len(st.KMSKeys) > 0 {
		fmt.Fprintf(out, "\nKMS-wrapped master keys stored: %s\n", strings.Join(st.KMSKeys, ", "))
	}
	fmt.Fprintln(out, "\nrunning processes:")
	return printTable(out, "", "HOST\tPID\tROLE\tSEALS WITH\tOPENS WITH", st.Holders,
		func(h custody.Holder) []any {
			return []any{h.Host, h.PID, h.Role, h.PrimaryKeyID, strings.Join(h.KeyIDs, ",")}
		})
}
