package batchsweep_test

import (
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/contracts"
)

func TestAccountsReadsBackABatchCall(t *testing.T) {
	t.Parallel()
	a, b := common.HexToAddress("0xaa"), common.HexToAddress("0xbb")
	usdt := common.HexToAddress("0x10")
	data := contracts.NewSweeper().PackBatch([]common.Address{a, b},
		[][]common.Address{{usdt}, {{}, usdt}}, [][]*big.Int{{big.NewInt(25)}, {big.NewInt(7), big.NewInt(3)}},
		[][]*big.Int{{big.NewInt(1)}, {big.NewInt(0), big.NewInt(2)}})
	got, err := batchsweep.Accounts(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Address != a || got[1].Address != b || len(got[0].Assets) != 1 || len(got[1].Assets) != 2 {
		t.Fatalf("accounts = %+v", got)
	}
	if got[0].Assets[0].Token != usdt || got[0].Assets[0].Amount.Int64() != 25 || got[0].Assets[0].Fee.Int64() != 1 ||
		got[1].Assets[0].Token != (common.Address{}) || got[1].Assets[0].Amount.Int64() != 7 || got[1].Assets[0].Fee.Sign() != 0 ||
		got[1].Assets[1].Amount.Int64() != 3 || got[1].Assets[1].Fee.Int64() != 2 {
		t.Fatalf("assets = %+v %+v", got[0].Assets, got[1].Assets)
	}
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"sweep":     contracts.NewSweeper().PackSweep([]common.Address{usdt}, []*big.Int{big.NewInt(1)}, []*big.Int{big.NewInt(0)}),
		"truncated": data[:40],
	} {
		if _, err := batchsweep.Accounts(bad); !errors.Is(err, batchsweep.ErrNotABatch) {
			t.Errorf("%s: err = %v, want ErrNotABatch", name, err)
		}
	}
}
