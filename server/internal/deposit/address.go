package deposit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
)

// AddressFor returns the deposit address of an operator's user, assigning the next derivation
// index the first time. The same address serves every EVM chain and is watched forever. It
// stays a plain EOA (never delegated): native deposits go there on every chain, and token
// deposits on chains that sweep with top-ups.
func (s *Service) AddressFor(ctx context.Context, operatorID, externalUserID string) (common.Address, error) {
	return s.userAddress(ctx, "deposit address", userAddressKind{lock: (*store.Queries).LockDepositor,
		derive: s.wallet.DepositAddress, save: (*store.Queries).AssignAddress}, operatorID, externalUserID)
}

// TokenAddressFor returns the token-deposit address of an operator's user (m/44'/60'/0'/1/i),
// assigning the next derivation index the first time: where the user's token deposits go on
// chains that sweep in EIP-7702 batches, which delegate it to the Sweeper. Like AddressFor, it
// is assigned once under the depositor's row lock, serves every EVM chain and is watched
// forever.
func (s *Service) TokenAddressFor(ctx context.Context, operatorID, externalUserID string) (common.Address, error) {
	return s.userAddress(ctx, "token-deposit address", userAddressKind{lock: (*store.Queries).LockTokenAddress,
		derive: s.wallet.TokenDepositAddress, save: (*store.Queries).InsertTokenAddress}, operatorID, externalUserID)
}

// userAddressKind is where one kind of a user's address is kept and how it is derived.
type userAddressKind struct {
	// lock locks the user's row and reads the address (index nil: none yet).
	lock   func(q *store.Queries, ctx context.Context, operatorID, externalUserID string) (*int64, string, error)
	derive func(i uint32) (common.Address, error)
	save   func(q *store.Queries, ctx context.Context, operatorID, externalUserID string, index int64, address string) error
}

// userAddress returns a user's address of a kind, assigning it the next derivation index the
// first time, in one transaction under the user's row lock, and watches it.
func (s *Service) userAddress(ctx context.Context, what string, kind userAddressKind, operatorID, externalUserID string) (common.Address, error) {
	var addr common.Address
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		index, existing, err := kind.lock(q, ctx, operatorID, externalUserID)
		if err != nil {
			return err
		}
		if index != nil {
			addr = common.HexToAddress(existing)
			return nil
		}
		i, err := s.nextIndex(ctx, q)
		if err != nil {
			return err
		}
		if addr, err = kind.derive(i); err != nil {
			return err
		}
		return kind.save(q, ctx, operatorID, externalUserID, int64(i), addr.Hex())
	})
	if err != nil {
		return addr, fault.Wrap(err, "assign "+what)
	}
	s.watched.add(addr)
	return addr, nil
}

// addressFor is where a user pays an asset on a network: the token-deposit address for a
// token on a chain that sweeps in EIP-7702 batches, else the user's address (native
// currencies everywhere, since a delegated address refuses 21,000-gas transfers).
func (s *Service) addressFor(ctx context.Context, n chain.Network, asset chain.Asset, operatorID, externalUserID string) (common.Address, error) {
	if !asset.Native && n.Batched() {
		return s.TokenAddressFor(ctx, operatorID, externalUserID)
	}
	return s.AddressFor(ctx, operatorID, externalUserID)
}

// AddressInfo is where and how much a deposit session's user pays.
type AddressInfo struct {
	Address         common.Address
	ChainID         int64
	Currency        string
	ContractAddress common.Address // zero for the native currency
	Decimals        int32
	// ExpectedUnits is the session's fiat amount in the asset's smallest unit at the current
	// rate, rounded up so paying it covers the amount.
	ExpectedUnits *big.Int
	Expected      string // in token units, e.g. "25.000000"
	PaymentURI    string // EIP-681
	ExpiresAt     time.Time
}

// Address answers GetDepositAddress for an open deposit session.
func (s *Service) Address(ctx context.Context, sess domain.Session, currency string, chainID int64) (AddressInfo, error) {
	priced, err := rates.PriceAsset(ctx, s.chains.Registry, s.prices, chainID, currency, sess.FiatCurrency, "accepted")
	if err != nil {
		return AddressInfo{}, err
	}
	asset, usd, perUSD := priced.Asset, priced.USD, priced.PerUSD
	n, ok := s.chains.Network(chainID)
	if !ok { // PriceAsset found the asset on it
		return AddressInfo{}, fault.Invalid("chainId", "chain %d is not configured", chainID)
	}
	addr, err := s.addressFor(ctx, n, asset, sess.OperatorID, sess.ExternalUserID)
	if err != nil {
		return AddressInfo{}, err
	}
	// Payments from the user in this asset on this chain now belong to this session (the newest
	// to hand an address out for them).
	if err := store.RecordHandout(ctx, s.pool, sess.ID, chainID, asset.Symbol); err != nil {
		return AddressInfo{}, fault.Wrap(err, "record address handout")
	}
	units := rates.FiatToTokenUnits(sess.Amount, perUSD, usd.Value, asset.Decimals)
	info := AddressInfo{Address: addr, ChainID: chainID, Currency: asset.Symbol, ContractAddress: asset.Contract,
		Decimals: asset.Decimals, ExpectedUnits: units, Expected: rates.FormatUnits(units, asset.Decimals), ExpiresAt: sess.ExpiresAt}
	if asset.Native {
		info.PaymentURI = fmt.Sprintf("ethereum:%s@%d?value=%s", addr.Hex(), chainID, units)
	} else {
		info.PaymentURI = fmt.Sprintf("ethereum:%s@%d/transfer?address=%s&uint256=%s", asset.Contract.Hex(), chainID, addr.Hex(), units)
	}
	return info, nil
}

// TreasuryOn is Treasury for a payment on a chain, which must be configured.
func (s *Service) TreasuryOn(ctx context.Context, operatorID string, chainID int64) (common.Address, error) {
	if _, ok := s.chains.Network(chainID); !ok {
		return common.Address{}, fault.Invalid("chainId", "chain %d is not configured", chainID)
	}
	return s.Treasury(ctx, operatorID)
}

// Treasury returns an operator's treasury address, assigning it the first time: payments to
// it (from anyone, in any configured asset) are swept like deposits and credited to the
// operator's funds, with no DEPOSIT webhook. It is derived like deposit addresses, so the same
// address serves every EVM chain and is watched forever.
func (s *Service) Treasury(ctx context.Context, operatorID string) (common.Address, error) {
	var addr common.Address
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if err := q.LockTreasuries(ctx); err != nil {
			return err
		}
		if t, err := q.Treasury(ctx, operatorID); err == nil {
			addr = common.HexToAddress(t.Address)
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := q.GetOperator(ctx, operatorID); errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.NotFound, "operator %s not found", operatorID)
		} else if err != nil {
			return err
		}
		i, next, err := s.nextAddress(ctx, q)
		if err != nil {
			return err
		}
		addr = next
		return q.InsertTreasury(ctx, operatorID, i, addr.Hex())
	})
	if err != nil {
		if fe := (*fault.Error)(nil); errors.As(err, &fe) {
			return addr, fe
		}
		return addr, fault.Wrap(err, "assign treasury address")
	}
	s.watched.add(addr)
	return addr, nil
}

// nextAddress takes the next derivation index (in q's transaction) and derives its address.
func (s *Service) nextAddress(ctx context.Context, q *store.Queries) (int64, common.Address, error) {
	i, err := s.nextIndex(ctx, q)
	if err != nil {
		return 0, common.Address{}, err
	}
	addr, err := s.wallet.DepositAddress(i)
	return int64(i), addr, err
}

// nextIndex takes the next derivation index (in q's transaction), one sequence for every kind
// of address, so the watched set reads them all as "indexes above n".
func (s *Service) nextIndex(ctx context.Context, q *store.Queries) (uint32, error) {
	i, err := q.NextAddressIndex(ctx)
	if err != nil {
		return 0, err
	}
	if i < 0 || i > math.MaxInt32 {
		return 0, fmt.Errorf("deposit: address index %d beyond BIP32's non-hardened range", i)
	}
	return uint32(i), nil
}
