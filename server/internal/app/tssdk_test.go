package app_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestTypeScriptSDKPackage: the output of `npm pack` of sdk/ts, installed in an empty
// directory as an operator would, creates a session against a live Coffer over Connect,
// gRPC-Web and gRPC, reads typed errors, serialises int64 results, and verifies a webhook
// with constructEvent and the http middleware (sdk/ts/test/packed/check.mjs).
func TestTypeScriptSDKPackage(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("npm is needed (make test installs the SDK's packages with it)")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", "..", "sdk", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(wd string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Dir, cmd.Env = wd, append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, stderr)
		}
		return string(out)
	}
	tarball := strings.TrimSpace(run(root, nil, "npm", "pack", "--silent", "--pack-destination", dir))
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"operator","private":true,"type":"module"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run(dir, nil, "npm", "install", "--silent", "--no-audit", "--no-fund", "--prefer-offline", filepath.Join(dir, tarball))
	script, err := os.ReadFile(filepath.Join(root, "test", "packed", "check.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check.mjs"), script, 0o600); err != nil {
		t.Fatal(err)
	}

	env := apptest.Start(t, apptest.Options{})
	_, key := env.Operator(t, domain.OperatorSettings{})
	body, err := sdk.Encode(&cofferv1.DepositEvent{DepositId: 9, ExternalUserId: "ts-user", Amount: "25000000"})
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{"content-type": sdk.ContentType}
	for k, v := range sdk.Headers([][]byte{[]byte(key)}, "evt-ts", time.Now(), body) {
		headers[strings.ToLower(k)] = v[0]
	}
	hook, err := json.Marshal(map[string]any{"headers": headers, "body": string(body)})
	if err != nil {
		t.Fatal(err)
	}
	out := run(dir, []string{"COFFER_URL=" + env.URL, "COFFER_KEY=" + key, "WEBHOOK=" + string(hook)}, "node", "check.mjs")

	var got struct {
		SessionURL    string `json:"sessionUrl"`
		ChainsJSON    string `json:"chainsJson"`
		GRPCWebChains int    `json:"grpcWebChains"`
		GRPCChains    int    `json:"grpcChains"`
		BadAmount     struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		} `json:"badAmount"`
		WrongKey string `json:"wrongKey"`
		Event    struct {
			Deposit        bool   `json:"deposit"`
			ExternalUserID string `json:"externalUserId"`
		} `json:"event"`
		Tampered   string `json:"tampered"`
		Middleware struct {
			Status int       `json:"status"`
			Reply  sdk.Reply `json:"reply"`
		} `json:"middleware"`
		MiddlewareBadSignature struct {
			Status int       `json:"status"`
			Reply  sdk.Reply `json:"reply"`
		} `json:"middlewareBadSignature"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("script printed %q: %v", out, err)
	}
	switch {
	case !strings.HasPrefix(got.SessionURL, env.URL+"/widget/?sid="):
		t.Errorf("session url %q", got.SessionURL)
	case !strings.Contains(got.ChainsJSON, `"chainId":"1337"`):
		t.Errorf("chains as JSON: %s", got.ChainsJSON)
	case got.GRPCWebChains != 1 || got.GRPCChains != 1:
		t.Errorf("chains over gRPC-Web %d, gRPC %d", got.GRPCWebChains, got.GRPCChains)
	case got.BadAmount.Code != "INVALID_ARGUMENT" || got.BadAmount.Field != "amount" || got.WrongKey != "UNAUTHENTICATED":
		t.Errorf("errors: %+v, wrong key %q", got.BadAmount, got.WrongKey)
	case !got.Event.Deposit || got.Event.ExternalUserID != "ts-user" || got.Tampered != "WebhookVerificationError":
		t.Errorf("constructEvent: %+v, tampered %q", got.Event, got.Tampered)
	case got.Middleware.Status != 200 || got.Middleware.Reply.Error != 0 || got.Middleware.Reply.Description != "credited evt-ts":
		t.Errorf("middleware: %+v", got.Middleware)
	case got.MiddlewareBadSignature.Status != 401 || got.MiddlewareBadSignature.Reply.Error == 0:
		t.Errorf("middleware, bad signature: %+v", got.MiddlewareBadSignature)
	}
}
