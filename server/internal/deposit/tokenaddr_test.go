package deposit_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// batched makes the test chain sweep with EIP-7702 (token deposits to token-deposit
// addresses). The Sweeper is never called here: any address will do.
func batched(n *chain.Network) {
	n.SweepMethod, n.SweeperAddress = chain.SweepEIP7702, randomAddress()
}

// handOut is the address Address hands out to sess for a currency on the test chain.
func (e *env) handOut(sessUser string, currency string) common.Address {
	e.t.Helper()
	info, err := e.svc.Address(e.ctx, e.openSession(sessUser), currency, e.dev.ChainID())
	if err != nil {
		e.t.Fatalf("address of %s for %s: %v", sessUser, currency, err)
	}
	return info.Address
}

// tokenAddressRows counts the token_addresses rows of a user.
func (e *env) tokenAddressRows(userID string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM token_addresses WHERE operator_id = $1 AND external_user_id = $2`,
		e.op.ID, userID).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestAddressPerCurrency: on a chain that sweeps with EIP-7702, tokens are paid to the user's
// token-deposit address (m/44'/60'/0'/1/i: the same for every token, session and call), the
// native currency to the user's plain address; on a topup chain, everything to the plain
// address, as before, and no token-deposit address is made.
func TestAddressPerCurrency(t *testing.T) {
	t.Parallel()
	t.Run("eip7702", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 0, batched)
		native := e.handOut("u", "ETH")
		usdt := e.handOut("u", "USDT")
		if plain := e.address("u"); native != plain {
			t.Fatalf("native address %s, want the user's address %s", native, plain)
		}
		if usdt == native {
			t.Fatal("token deposits go to the native deposit address")
		}
		for _, currency := range []string{"usdt", "USDC"} { // another call, session and token
			if again := e.handOut("u", currency); again != usdt {
				t.Fatalf("%s address %s, want the token-deposit address %s", currency, again, usdt)
			}
		}
		if again := e.handOut("u", "ETH"); again != native {
			t.Fatalf("native address moved to %s", again)
		}
		token, err := e.svc.TokenAddressFor(e.ctx, e.op.ID, "u")
		if err != nil || token != usdt {
			t.Fatalf("TokenAddressFor = %s %v, want %s", token, err, usdt)
		}
		owner, err := store.New(e.pool).DepositAddressByAddress(e.ctx, usdt.Hex())
		if err != nil || !owner.Token || owner.Treasury || owner.ExternalUserID != "u" || owner.OperatorID != e.op.ID {
			t.Fatalf("owner of the token-deposit address: %+v %v", owner, err)
		}
		if _, want, _ := e.keys.TokenDeposit(owner.Index); want != usdt {
			t.Fatalf("token-deposit address %s is not m/44'/60'/0'/1/%d (%s)", usdt, owner.Index, want)
		}
		// Another user gets another one, from the same index sequence.
		if other := e.handOut("v", "USDT"); other == usdt || other == native {
			t.Fatal("two users share a token-deposit address")
		}
		if code, _ := e.dev.Client().CodeAt(e.ctx, native, nil); len(code) != 0 {
			t.Fatalf("native address has code %x", code)
		}
	})
	t.Run("topup", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 0)
		plain := e.address("u")
		for _, currency := range []string{"USDT", "USDC", "ETH"} {
			if got := e.handOut("u", currency); got != plain {
				t.Fatalf("%s address %s on a topup chain, want the user's address %s", currency, got, plain)
			}
		}
		if n := e.tokenAddressRows("u"); n != 0 {
			t.Fatalf("%d token-deposit addresses made on a topup chain", n)
		}
	})
}

// TestTokenAddressAssignedOnce: concurrent first calls (with the user's plain address being
// assigned at the same time) agree on one token-deposit address, stored once.
func TestTokenAddressAssignedOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 0, batched)
	const n = 8
	tokens := make([]common.Address, n)
	plains := make([]common.Address, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			if tokens[i], err = e.svc.TokenAddressFor(e.ctx, e.op.ID, "racer"); err != nil {
				t.Error(err)
			}
			if plains[i], err = e.svc.AddressFor(e.ctx, e.op.ID, "racer"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if tokens[i] != tokens[0] || plains[i] != plains[0] {
			t.Fatalf("call %d got %s / %s, call 0 %s / %s", i, tokens[i], plains[i], tokens[0], plains[0])
		}
	}
	if tokens[0] == plains[0] {
		t.Fatal("token-deposit address equals the plain address")
	}
	if rows := e.tokenAddressRows("racer"); rows != 1 {
		t.Fatalf("%d token-deposit addresses stored", rows)
	}
	if !deposit.WatchMaybe(e.svc, tokens[0]) {
		t.Fatal("the token-deposit address is not watched")
	}
}

// TestTokenDepositAttributed: a USDT transfer to the token-deposit address is a deposit of
// the user, attributed to the session that handed the address out for USDT; an ETH payment to
// the plain address, to the session that handed that one out for ETH.
func TestTokenDepositAttributed(t *testing.T) {
	t.Parallel()
	e := setup(t, 0, batched)
	usdtSession, ethSession := e.openSession("payer"), e.openSession("payer")
	usdt, err := e.svc.Address(e.ctx, usdtSession, "USDT", e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	eth, err := e.svc.Address(e.ctx, ethSession, "ETH", e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(usdt.PaymentURI, "address="+usdt.Address.Hex()) {
		t.Fatalf("payment URI %s does not pay the token-deposit address %s", usdt.PaymentURI, usdt.Address)
	}
	u := e.newUser()
	tokenTx := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(usdt.Address, 25_000_000), 2)
	ethTx := e.send(u, 1, eth.Address, milli(20), nil, 2)
	e.mine(tokenTx, ethTx)
	e.scan()
	tokenOwner, _ := store.New(e.pool).DepositAddressByAddress(e.ctx, usdt.Address.Hex())
	plainOwner, _ := store.New(e.pool).DepositAddressByAddress(e.ctx, eth.Address.Hex())
	want := map[string]struct {
		address common.Address
		session string
		index   uint32
	}{
		tokenTx.Hash().Hex(): {usdt.Address, usdtSession.ID, tokenOwner.Index},
		ethTx.Hash().Hex():   {eth.Address, ethSession.ID, plainOwner.Index},
	}
	found := e.depositsWhere("CONFIRMING")
	if len(found) != 2 {
		t.Fatalf("detected %+v", found)
	}
	for _, d := range found {
		w := want[d.TxHash]
		if d.Address != w.address.Hex() || d.AddressIndex != w.index || d.SessionID != w.session || d.OperatorID != e.op.ID ||
			d.ExternalUserID != "payer" || d.Treasury {
			t.Errorf("deposit %s %s at %s (index %d) session %s, want at %s (index %d) session %s", d.TxHash, d.Currency, d.Address,
				d.AddressIndex, d.SessionID, w.address, w.index, w.session)
		}
		if d.Currency == "USDT" && d.GrossAmount.Int64() != 25_000_000 {
			t.Errorf("USDT deposit of %v, want 25 USDT", d.GrossAmount)
		}
	}
}

// TestSavedFilterWatchesTokenAddresses: a worker restarting from the saved filter watches the
// token-deposit addresses in it and those assigned (by another process) after it was saved.
func TestSavedFilterWatchesTokenAddresses(t *testing.T) {
	t.Parallel()
	e := setup(t, 0, batched)
	deposit.SaveWatchAfterEach(e.svc)
	here, err := e.svc.TokenAddressFor(e.ctx, e.op.ID, "here")
	if err != nil {
		t.Fatal(err)
	}
	e.scan()
	if last, _ := e.savedFilter(); last < 0 {
		t.Fatalf("saved filter at index %d; want the token-deposit address in it", last)
	}

	deposit.RestartWatch(e.svc)
	afterSave := randomAddress()
	if _, err := e.pool.Exec(e.ctx, `WITH d AS (INSERT INTO depositors (operator_id, external_user_id) VALUES ($1, 'after-save'))
		INSERT INTO token_addresses (operator_id, external_user_id, address_index, address)
		VALUES ($1, 'after-save', nextval('deposit_address_index'), $2)`, e.op.ID, afterSave.Hex()); err != nil {
		t.Fatal(err)
	}
	e.loadSavedFilter()
	e.checkPaymentsFound([]common.Address{here, afterSave}, randomAddress())
}

// TestKeyRingTokenAddress: the engine's key ring gives a token-deposit address its key
// (branch 1 of the deposit account, re-derived from its index), still gives plain addresses
// theirs, and refuses a seed that does not derive the stored address.
func TestKeyRingTokenAddress(t *testing.T) {
	t.Parallel()
	e := setup(t, 0, batched)
	token, err := e.svc.TokenAddressFor(e.ctx, e.op.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	plain := e.address("k")
	// e.keys has derived neither (the service derives addresses from the public half): Key
	// finds the index and the branch in the database.
	for _, addr := range []common.Address{token, plain} {
		if _, ok := e.keys.Signer(addr); ok {
			t.Fatalf("%s already derived", addr)
		}
	}
	ring := deposit.KeyRing{Keys: e.keys, Pool: e.pool}
	for _, addr := range []common.Address{token, plain} {
		key, err := ring.Key(e.ctx, addr)
		if err != nil || crypto.PubkeyToAddress(key.PublicKey) != addr {
			t.Fatalf("key of %s: %v", addr, err)
		}
	}
	other, err := wallet.FromSeed(secret.Random(wallet.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	wrong := deposit.KeyRing{Keys: other, Pool: e.pool}
	if _, err := wrong.Key(e.ctx, token); err == nil || !strings.Contains(err.Error(), "token-deposit index") ||
		!strings.Contains(err.Error(), "wrong seed") {
		t.Fatalf("wrong seed: %v", err)
	}
	if _, err := ring.Key(e.ctx, randomAddress()); err == nil {
		t.Fatal("a key for an address of nobody")
	}
}
