package config

import (
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL":      "postgres://x@localhost/db",
		"COFFER_MASTER_KEY": strings.Repeat("ab", 32),
		"COFFER_BASE_URL":   "https://pay.example.com/",
	}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.WidgetURL != "https://pay.example.com/widget" || c.SessionTTL != 30*time.Minute || c.Role != RoleAll || len(c.Chains.Networks()) != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	rates, err := ParseRates(" eur=0.92, GBP=0.79 ,")
	if err != nil || rates["EUR"].String() != "0.92" || len(rates) != 2 {
		t.Fatalf("ParseRates: %v %v", rates, err)
	}
	for _, bad := range []string{"EUR", "EUR=", "EUR=-1", "=1", "EUR=abc"} {
		if _, err := ParseRates(bad); err == nil {
			t.Errorf("ParseRates(%q) accepted", bad)
		}
	}
	env = map[string]string{"COFFER_SESSION_TTL": "-1m", "COFFER_ROLE": "boss", "COFFER_MASTER_KEY": "short", "COFFER_LOG_LEVEL": "loud"}
	_, err = FromEnv(func(k string) string { return env[k] })
	for _, want := range []string{"DATABASE_URL is required", "COFFER_MASTER_KEY", "COFFER_SESSION_TTL", `role "boss"`, "COFFER_LOG_LEVEL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}
