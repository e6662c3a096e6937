package deposit

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestNativeSharesSplitGasByWhatEachPutIn: a native transfer's gas is shared by what each
// deposit put into it (gross less its own fee). Shared by gross, a deposit whose fee was fixed
// high at an earlier sweep (50%) swept with one at 0% bore gas on the half it never sent and
// was credited less than nothing (-0.175 ETH in the first case) while the other got more than it paid.
func TestNativeSharesSplitGasByWhatEachPutIn(t *testing.T) {
	t.Parallel()
	eth := func(milli int64) *big.Int { return new(big.Int).Mul(big.NewInt(milli), big.NewInt(1e15)) }
	type dep struct{ gross, fee *big.Int }
	for _, tc := range []struct {
		name    string
		deps    []dep
		reached *big.Int
		want    []*big.Int
	}{
		{"fees 50% and 0%, gas above half", []dep{{eth(1000), eth(500)}, {eth(1000), eth(0)}}, eth(150),
			[]*big.Int{eth(50), eth(100)}},
		{"fees 50% and 0%, little gas", []dep{{eth(1000), eth(500)}, {eth(1000), eth(0)}}, eth(1497),
			[]*big.Int{eth(499), eth(998)}},
		{"one fee, two sizes", []dep{{eth(3000), eth(30)}, {eth(1000), eth(10)}}, eth(3956),
			[]*big.Int{eth(2967), eth(989)}},
		{"the last takes the rounding", []dep{{big.NewInt(10), big.NewInt(0)}, {big.NewInt(10), big.NewInt(0)}, {big.NewInt(10), big.NewInt(0)}},
			big.NewInt(29), []*big.Int{big.NewInt(10), big.NewInt(10), big.NewInt(9)}},
		{"nothing reached", []dep{{eth(1000), eth(500)}, {eth(1000), eth(0)}}, eth(0), []*big.Int{eth(0), eth(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := &group{gross: new(big.Int), fee: new(big.Int), fees: map[int64]*big.Int{}}
			for i, d := range tc.deps {
				g.deposits = append(g.deposits, domain.Deposit{ID: int64(i + 1), GrossAmount: d.gross})
				g.gross.Add(g.gross, d.gross)
				g.fee.Add(g.fee, d.fee)
				g.fees[int64(i+1)] = d.fee
			}
			got := nativeShares(g, tc.reached)
			sum := new(big.Int)
			for i, v := range got {
				sum.Add(sum, v)
				if v.Cmp(tc.want[i]) != 0 {
					t.Errorf("deposit %d credited %s, want %s", i+1, v, tc.want[i])
				}
				if net := new(big.Int).Sub(tc.deps[i].gross, tc.deps[i].fee); v.Sign() < 0 || (i < len(got)-1 && v.Cmp(net) > 0) {
					t.Errorf("deposit %d credited %s: outside 0..%s", i+1, v, net)
				}
			}
			if sum.Cmp(tc.reached) != 0 {
				t.Errorf("credited %s in all, the bankroll received %s", sum, tc.reached)
			}
		})
	}
}
