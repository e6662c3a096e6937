package legacy

import (
	"net/http"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/envelope"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

type balanceJSON struct {
	OperatorID string `json:"operatorId"`
	ChainID    int64  `json:"chainId"`
	Currency   string `json:"currency"`
	Available  string `json:"available"`
	Reserved   string `json:"reserved"`
	Decimals   int32  `json:"decimals"`
}

// listBalances is GET /balances[?operatorId=<sub-operator>]: the operator's funds per chain
// and asset, as a list in the spec's envelope (data.items; nextCursor is always null: the
// list is never paged).
func (h *Handler) listBalances(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := knownParams(q, "GET /balances", "operatorId"); err != nil {
		return err
	}
	req := &cofferv1.ListBalancesRequest{OperatorId: q.Get("operatorId")}
	if err := rpc.Validate(req); err != nil {
		return err
	}
	res, err := h.s.Balance.ListBalances(r.Context(), req)
	if err != nil {
		return err
	}
	items := make([]balanceJSON, len(res.Items))
	for i, b := range res.Items {
		items[i] = balanceJSON{OperatorID: b.OperatorId, ChainID: b.ChainId, Currency: b.Currency, Available: b.Available,
			Reserved: b.Reserved, Decimals: b.Decimals}
	}
	envelope.Success(w, "Balances", struct {
		Items      []balanceJSON `json:"items"`
		NextCursor *string       `json:"nextCursor"`
	}{items, nil})
	return nil
}
