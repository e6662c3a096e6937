package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// TestOpsDeadLetters: `coffer ops deadletters` lists a real dead letter (a receiver that is
// down for all five attempts of a running service on the CLI's database) as
// OpsService.ListDeadLetteredWebhooks does, and `coffer ops redeliver` queues it again, after
// which it is delivered with the same id. Bad input is a usage error (exit 2), an unknown id
// "not found" (exit 1), a webhook that is not dead a conflict (exit 1); none changes anything.
func TestOpsDeadLetters(t *testing.T) {
	dbURL, masterKey := cliDatabase(t)
	key, err := secret.ParseMasterKey(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	env := apptest.Start(t, apptest.Options{DatabaseURL: dbURL, MasterKey: key, WebhookRetries: jobs.RetrySchedule{20 * time.Millisecond}})
	if out, errOut, code := coffer(t, "ops", "deadletters"); code != 0 || !strings.Contains(out, "no dead letters") {
		t.Fatalf("empty: %d %s %s", code, out, errOut)
	}
	r := hooktest.New(t)
	op, _ := r.Operator(t, env, domain.OperatorSettings{})
	r.SetDown(true)
	id := enqueueTestWebhook(t, env, op.ID)
	waitWebhookState(t, env, id, domain.DeliveryDead)

	out, errOut, code := coffer(t, "ops", "deadletters")
	for _, want := range []string{"EVENT", id, op.ID, "DEPOSIT", "5"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("deadletters lacks %q: %d %s %s", want, code, out, errOut)
		}
	}
	out, _, code = coffer(t, "ops", "deadletters", "--operator", op.ID, "--limit", "1", "--json")
	res := &cofferv1.ListDeadLetteredWebhooksResponse{}
	if err := protojson.Unmarshal([]byte(out), res); code != 0 || err != nil || len(res.Deliveries) != 1 ||
		res.Deliveries[0].EventId != id || res.Deliveries[0].Attempts != webhook.MaxAttempts || res.Deliveries[0].State != "dead" {
		t.Fatalf("deadletters --json: %d %v %s", code, err, out)
	}
	if out, _, code := coffer(t, "ops", "deadletters", "--operator", uuid.NewString()); code != 0 || !strings.Contains(out, "no dead letters") {
		t.Errorf("another operator's: %d %s", code, out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ops", "deadletters", "--operator", "acme"}, 2, "must be an operator id"},
		{[]string{"ops", "deadletters", "--limit", "0"}, 2, "-limit: must be 1..200"},
		{[]string{"ops", "deadletters", "--limit", "201"}, 2, "-limit: must be 1..200"},
		{[]string{"ops", "deadletters", "extra"}, 2, "unexpected argument"},
		{[]string{"ops", "redeliver"}, 2, "--id is required"},
		{[]string{"ops", "redeliver", "--id", "42"}, 2, "--id must be a webhook's event id"},
		{[]string{"ops", "redeliver", "--id", uuid.NewString()}, 1, "not found"},
	} {
		if _, errOut, code := coffer(t, c.args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want %d %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if state, attempts := webhookState(t, env, id); state != domain.DeliveryDead || attempts != webhook.MaxAttempts {
		t.Fatalf("refused commands changed the dead letter: %s after %d attempts", state, attempts)
	}

	r.SetDown(false)
	for i := 0; ; i++ { // the job that dead-lettered it may still be finishing (ABORTED)
		out, errOut, code = coffer(t, "ops", "redeliver", "--id", id, "--json")
		if code == 0 || i == 50 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	red := &cofferv1.RedeliverDeadLetterResponse{}
	if err := protojson.Unmarshal([]byte(out), red); code != 0 || err != nil || red.Delivery.GetEventId() != id || red.Delivery.GetState() != "pending" {
		t.Fatalf("redeliver: %d %v %s %s", code, err, out, errOut)
	}
	waitWebhookState(t, env, id, domain.DeliveryDelivered)
	if got := r.All(); len(got) != 1 || got[0].ID != id {
		t.Fatalf("the receiver acknowledged %v, want the one webhook %s", got, id)
	}
	if _, errOut, code := coffer(t, "ops", "redeliver", "--id", id); code != 1 || !strings.Contains(errOut, "only a dead-lettered webhook") {
		t.Errorf("redeliver a delivered webhook: %d %s", code, errOut)
	}
	if out, _, code := coffer(t, "ops", "deadletters"); code != 0 || !strings.Contains(out, "no dead letters") {
		t.Errorf("after redelivery: %d %s", code, out)
	}
}

// enqueueTestWebhook puts a DEPOSIT in the outbox as the deposit pipeline does, in a
// transaction of its own, and returns its event id.
func enqueueTestWebhook(t *testing.T, env *apptest.Env, operatorID string) string {
	t.Helper()
	id := uuid.NewString()
	err := store.InTx(t.Context(), env.Pool, func(tx pgx.Tx) error {
		return env.Services.Webhooks.Enqueue(t.Context(), tx, webhook.Event{ID: id, OperatorID: operatorID, SubjectID: uuid.NewString(),
			Message: &cofferv1.DepositEvent{Event: "DEPOSIT", DepositId: 7, IdempotencyKey: "dep-7", ExternalUserId: "alice",
				Amount: "24750000", GrossAmount: "25000000", FeeAmount: "250000", LocalCurrencyCode: "USD", CurrentRate: "1",
				Pair: "USDT/USD", Type: "DIRECT_TRANSFER", ChainId: 1337}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// webhookState is a webhook's delivery state and its attempts so far.
func webhookState(t *testing.T, env *apptest.Env, id string) (domain.DeliveryState, int32) {
	t.Helper()
	var state string
	var attempts int32
	if err := env.Pool.QueryRow(t.Context(), `SELECT state, attempts FROM webhook_events WHERE id = $1`, id).Scan(&state, &attempts); err != nil {
		t.Fatal(err)
	}
	return domain.DeliveryState(state), attempts
}

// waitWebhookState waits until the webhook is in state want (20 s at most).
func waitWebhookState(t *testing.T, env *apptest.Env, id string, want domain.DeliveryState) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		state, attempts := webhookState(t, env, id)
		if state == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook %s is %s after %d attempts, want %s", id, state, attempts, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
