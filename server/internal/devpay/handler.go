package devpay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/envelope"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// Path is the dev wallet endpoint: `coffer dev` serves it, `coffer serve` does not.
const Path = "/dev/pay"

// Addresses returns a deposit session's address for a currency on a chain, as the widget's
// GetDepositAddress does: it authenticates the sid and refuses what the session would.
type Addresses func(ctx context.Context, sid, currency string, chainID int64) (common.Address, error)

// request is POST /dev/pay's body.
type request struct {
	Sid      string `json:"sid"`
	Currency string `json:"currency"`
	ChainID  int64  `json:"chainId"`
	Amount   string `json:"amount"`
}

// Handler serves POST /dev/pay: it pays amount of currency from the faucet of chainId to the
// deposit address of the session sid, and answers when the payment is mined, in the REST
// envelope: {"status":"success","message":…,"data":<Receipt>}, or {"status":"error",
// "message":…,"data":{"code":…,"field":…}} with the code's HTTP status. Nothing is sent
// unless every field is valid.
func Handler(faucets map[int64]*Faucet, addresses Addresses, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		receipt, err := pay(r, faucets, addresses)
		if err != nil {
			envelope.Error(r.Context(), w, log, err)
			return
		}
		log.InfoContext(r.Context(), "paid from the dev wallet", "hash", receipt.Hash.Hex(), "to", receipt.To.Hex(),
			"currency", receipt.Currency, "amount", receipt.Amount)
		envelope.Success(w, "Paid from the dev wallet", receipt)
	})
}

func pay(r *http.Request, faucets map[int64]*Faucet, addresses Addresses) (Receipt, error) {
	var req request
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return Receipt{}, fault.New(fault.PayloadTooLarge, "body too large")
		}
		return Receipt{}, fault.Invalid("", "the body must be a JSON object {sid, currency, chainId, amount}: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Receipt{}, fault.Invalid("", "the body must be one JSON object")
	}
	f, ok := faucets[req.ChainID]
	if !ok {
		return Receipt{}, fault.Invalid("chainId", "no dev chain with id %d", req.ChainID)
	}
	to, err := addresses(r.Context(), req.Sid, req.Currency, req.ChainID)
	if err != nil {
		return Receipt{}, err
	}
	p, err := f.Check(to.Hex(), req.Currency, req.Amount)
	if err != nil {
		return Receipt{}, err
	}
	return f.Pay(r.Context(), p)
}
