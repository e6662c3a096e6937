package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testfactory"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// BenchmarkPayouts: mode-B withdrawals approved through POST /withdraw/:id/decision (50 calls
// in flight) on the embedded dev chain (a block every second, two confirmations), until each
// WITHDRAW_COMPLETE is acknowledged by a local receiver. The hot wallet's nonces are allocated
// in PostgreSQL, so many payouts ride in each block. Reported: withdrawals per second from the
// first APPROVE to the last acknowledgement, and the time from APPROVE to the answer carrying
// settlementTxHash (p50, p99).
func BenchmarkPayouts(b *testing.B) {
	const withdrawals, inFlight, confirmations, blockTime = 200, 50, 2, time.Second
	ctx := b.Context()
	dev, env := startDevCoffer(b, blockTime, 100*time.Millisecond, confirmations)
	_, hot := env.Services.Keys.HotWallet()
	testfactory.Fund(ctx, b, dev, hot, 1000, 1_000_000_000_000)
	receiver := newAcks(b, "WITHDRAW_COMPLETE", "withdrawRequestId", `{"error":0,"description":"received"}`)
	external, enabled := domain.ApprovalExternal, true
	op, key := env.Operator(b, domain.OperatorSettings{WebhookURL: &receiver.srv.URL, ApprovalMode: &external, ApprovalEnabled: &enabled})
	env.Fund(b, op.ID, dev.ChainID(), "USDT", strconv.Itoa(withdrawals*5)) // its own funds pay its payouts

	ids := make([]string, withdrawals)
	for i := range ids {
		o, err := env.Services.Sessions.Open(ctx, op, session.Withdraw, session.Input{ExternalUserID: fmt.Sprintf("user-%d", i),
			Lang: "en", FiatCurrency: "USD", UserBalance: "100", Amount: "5.00"})
		if err != nil {
			b.Fatal(err)
		}
		k, _ := crypto.GenerateKey()
		w, err := env.Services.Withdrawals.Submit(ctx, o.Session, withdrawal.Submission{
			Address: crypto.PubkeyToAddress(k.PublicKey).Hex(), Currency: "USDT", ChainID: dev.ChainID()})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = w.ID
	}

	latencies := make([]time.Duration, withdrawals)
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for i := range work {
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, env.URL+"/withdraw/"+ids[i]+"/decision", strings.NewReader(`{"decision":"APPROVE"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Error(err)
					continue
				}
				var out struct {
					Data struct {
						WithdrawStatus   string `json:"withdrawStatus"`
						SettlementTxHash string `json:"settlementTxHash"`
					} `json:"data"`
				}
				if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
					b.Error(err)
				}
				res.Body.Close()
				if out.Data.WithdrawStatus != "COMPLETED" || out.Data.SettlementTxHash == "" {
					b.Errorf("APPROVE %s answered %+v", ids[i], out.Data)
				}
				latencies[i] = time.Since(t0)
			}
		})
	}
	for i := range ids {
		work <- i
	}
	close(work)
	wg.Wait()
	var last time.Time
	for _, t := range receiver.wait(b, withdrawals, 2*time.Minute) {
		if t.After(last) {
			last = t
		}
	}
	elapsed := last.Sub(start)
	var blocks, payouts int
	if err := env.Pool.QueryRow(ctx, `SELECT count(DISTINCT mined_block), count(*) FROM chain_txs WHERE purpose = 'payout'`).Scan(&blocks, &payouts); err != nil {
		b.Fatal(err)
	}
	if payouts != withdrawals {
		b.Fatalf("%d payouts for %d withdrawals", payouts, withdrawals)
	}
	slices.Sort(latencies)
	p50, p99 := latencies[len(latencies)/2], latencies[min(len(latencies)-1, len(latencies)*99/100)]
	for b.Loop() {
	}
	rate := float64(withdrawals) / elapsed.Seconds()
	b.ReportMetric(rate, "withdrawals/s")
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	fmt.Printf("\npayouts: %d mode-B withdrawals approved (%d in flight), block every %v, %d confirmations: %.1f withdrawals/s to the last WITHDRAW_COMPLETE acknowledged (%v); APPROVE to settlementTxHash p50 %v, p99 %v; %d payouts in %d blocks (%.1f per block)\n\n",
		withdrawals, inFlight, blockTime, confirmations, rate, elapsed.Round(time.Millisecond), p50.Round(time.Millisecond),
		p99.Round(time.Millisecond), payouts, blocks, float64(payouts)/float64(blocks))
}
