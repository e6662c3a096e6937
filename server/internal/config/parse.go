package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
)

// The parsers of Entries. Each takes a function naming its field (the pointer into a Config
// being filled), so one entry says which variable, which default, which parse, which field.

func text(field func(*Config) *string) func(*Config, Entry, string) error {
	return func(c *Config, _ Entry, v string) error {
		*field(c) = v
		return nil
	}
}

// baseURL is a URL stored without a trailing slash; $COFFER_BASE_URL in it is the base URL
// (read before: the widget's default is under it). It must be an absolute http(s) URL without
// query or fragment: session URLs handed to operators are built on it (<widget>/?sid=…).
func baseURL(field func(*Config) *string) func(*Config, Entry, string) error {
	return func(c *Config, e Entry, v string) error {
		v = strings.TrimRight(strings.ReplaceAll(v, "$COFFER_BASE_URL", c.BaseURL), "/")
		*field(c) = v
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return fmt.Errorf("%s %q: must be an absolute http(s) URL without query or fragment, such as https://pay.example.com", e.Name, v)
		}
		return nil
	}
}

// parsed sets a field to parse(v), naming the entry in parse's error.
func parsed[T any](field func(*Config) *T, parse func(string) (T, error)) func(*Config, Entry, string) error {
	return func(c *Config, e Entry, v string) (err error) {
		if *field(c), err = parse(v); err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		return nil
	}
}

func positive(field func(*Config) *time.Duration) func(*Config, Entry, string) error {
	return func(c *Config, e Entry, v string) error {
		d, err := time.ParseDuration(v)
		if *field(c) = d; err != nil || d <= 0 {
			return fmt.Errorf("%s must be a positive duration such as %s", e.Name, e.Default)
		}
		return nil
	}
}

func atLeast(least time.Duration, field func(*Config) *time.Duration) func(*Config, Entry, string) error {
	return func(c *Config, e Entry, v string) error {
		d, err := time.ParseDuration(v)
		if *field(c) = d; err != nil || d < least {
			return fmt.Errorf("%s must be a duration of at least %s", e.Name, least)
		}
		return nil
	}
}

func count(field func(*Config) *int) func(*Config, Entry, string) error {
	return func(c *Config, e Entry, v string) error {
		n, err := strconv.Atoi(v)
		if *field(c) = n; err != nil || n < 1 {
			return fmt.Errorf("%s must be a positive integer", e.Name)
		}
		return nil
	}
}

func table(field func(*Config) *map[string]decimal.Decimal) func(*Config, Entry, string) error {
	return func(c *Config, e Entry, v string) (err error) {
		if *field(c), err = ParseRates(v); err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		return nil
	}
}

// ParseRates reads "EUR=0.92,GBP=0.79" into a table of positive decimals.
func ParseRates(raw string) (map[string]decimal.Decimal, error) {
	out := map[string]decimal.Decimal{}
	for pair := range strings.SplitSeq(raw, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		d, err := decimal.NewFromString(strings.TrimSpace(v))
		if !ok || strings.TrimSpace(k) == "" || err != nil || !d.IsPositive() {
			return nil, fmt.Errorf("%q: want SYMBOL=positive decimal", pair)
		}
		out[strings.ToUpper(strings.TrimSpace(k))] = d
	}
	return out, nil
}

// shortDuration writes a default as people do: 2m, not 2m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// prefixes writes a list of prefixes as COFFER_TRUSTED_PROXIES takes it.
func prefixes(list []netip.Prefix) string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.String()
	}
	return strings.Join(out, ",")
}

// failpoint is COFFER_FAILPOINT: a step of sending a transaction, or `coffer keys
// rotate-master`'s reseal-pause:N. A misspelt one would never fire, and the crash test that set
// it would pass without crashing anything.
func failpoint(c *Config, e Entry, v string) error {
	c.Failpoint = v
	steps := []string{chaintx.StepNonce, chaintx.StepSigned, chaintx.StepStored, chaintx.StepBroadcast, chaintx.StepReceipt}
	if pause, ok := strings.CutPrefix(v, "reseal-pause:"); ok {
		if n, err := strconv.Atoi(pause); err == nil && n >= 0 {
			return nil
		}
	} else if v == "" || slices.Contains(steps, v) {
		return nil
	}
	return fmt.Errorf("%s %q: must be empty (testing only), one of %s, or reseal-pause:N", e.Name, v, strings.Join(steps, ", "))
}

// offRamp is COFFER_OFFRAMP: empty, or dev on the dev chain only. The dev provider "collects"
// at an address whose key nobody holds: on a real network every OFF_RAMP payout would be lost.
func offRamp(c *Config, e Entry, v string) error {
	if c.OffRamp = v; v != "" && v != "dev" {
		return fmt.Errorf("%s must be empty or dev", e.Name)
	}
	if v == "dev" && c.Chains != nil {
		for _, n := range c.Chains.Networks() {
			if n.ChainID != chain.DevChainID {
				return fmt.Errorf("%s=dev pays OFF_RAMP withdrawals to an address nobody holds: only on the dev chain (%d), not chain %d",
					e.Name, chain.DevChainID, n.ChainID)
			}
		}
	}
	return nil
}
