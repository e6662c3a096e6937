package legacy

import (
	"context"
	"net/http"
	"strings"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/envelope"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

type sessionData struct {
	URL        string `json:"url"`
	SessionRef string `json:"sessionRef"`
}

// openedSession is what CreateDepositSession and CreateWithdrawSession answer alike.
type openedSession interface {
	GetUrl() string
	GetSessionRef() string
}

// createSession is the endpoint of a session-opening operation (POST /session/deposit,
// /session/withdraw): the envelope says answer, with the session's url and reference.
func createSession[Req any, PReq message[Req], Res openedSession](answer string, open func(context.Context, PReq) (Res, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		res, err := call(r, open)
		if err != nil {
			return err
		}
		envelope.Success(w, answer, sessionData{URL: res.GetUrl(), SessionRef: res.GetSessionRef()})
		return nil
	}
}

// createSessionByKey is createSession for the operation's byKey variant (see Mount).
func createSessionByKey[Req any, PReq message[Req], Res openedSession](answer string, open func(context.Context, string, PReq) (Res, error)) func(http.ResponseWriter, *http.Request) (bool, error) {
	return func(w http.ResponseWriter, r *http.Request) (bool, error) {
		res, done, err := byKey(r, open)
		if done && err == nil {
			envelope.Success(w, answer, sessionData{URL: res.GetUrl(), SessionRef: res.GetSessionRef()})
		}
		return done, err
	}
}

type testWebhookData struct {
	Delivered bool   `json:"delivered"`
	Status    int32  `json:"status"`
	Event     string `json:"event"`
}

func (h *Handler) sendTestWebhook(w http.ResponseWriter, r *http.Request) error {
	res, err := callWithPath(r, h.s.Session.SendTestWebhook, true,
		func(req *cofferv1.SendTestWebhookRequest) { req.Sid = r.PathValue("uuid") }, "sid")
	if err != nil {
		return err
	}
	envelope.Success(w, "Test webhook sent", testWebhookData{Delivered: res.Delivered, Status: res.Status, Event: res.Event})
	return nil
}

type depositorData struct {
	ExternalUserID string     `json:"externalUserId"`
	Email          *string    `json:"email"`
	DepositAddress *string    `json:"depositAddress"`
	CreatedAt      *time.Time `json:"createdAt"`
}

func depositorJSON(d *cofferv1.Depositor) depositorData {
	out := depositorData{ExternalUserID: d.GetExternalUserId()}
	if d.GetEmail() != "" {
		out.Email = &d.Email
	}
	if d.GetDepositAddress() != "" {
		out.DepositAddress = &d.DepositAddress
	}
	if d.GetCreatedAt() != nil {
		t := d.GetCreatedAt().AsTime()
		out.CreatedAt = &t
	}
	return out
}

func (h *Handler) createDepositor(w http.ResponseWriter, r *http.Request) error {
	res, err := call(r, h.s.Depositor.CreateDepositor)
	if err != nil {
		return err
	}
	message := "Depositor created"
	emailChange := shortEnum(res.EmailChange)
	if !res.Created {
		message = "Depositor already exists; email " + strings.ToLower(emailChange)
	}
	envelope.Success(w, message, struct {
		depositorData

		Created     bool   `json:"created"`
		EmailChange string `json:"emailChange"`
	}{depositorJSON(res.Depositor), res.Created, emailChange})
	return nil
}

func (h *Handler) checkDepositor(w http.ResponseWriter, r *http.Request) error {
	req := cofferv1.CheckDepositorRequest{ExternalUserId: r.PathValue("externalUserId")}
	if err := rpc.Validate(&req); err != nil {
		return err
	}
	res, err := h.s.Depositor.CheckDepositor(r.Context(), &req)
	if err != nil {
		return err
	}
	type checkData struct {
		Exists        bool `json:"exists"`
		depositorData      //nolint:embeddedstructfieldcheck // "exists" leads the JSON object (the golden files pin the wire order)
	}
	if !res.Exists {
		envelope.Success(w, "Depositor not found", checkData{Exists: false, depositorData: depositorData{ExternalUserID: req.ExternalUserId}})
		return nil
	}
	envelope.Success(w, "Depositor found", checkData{Exists: true, depositorData: depositorJSON(res.Depositor)})
	return nil
}

type depositAddressData struct {
	Address         string    `json:"address"`
	ChainID         int64     `json:"chainId"`
	Currency        string    `json:"currency"`
	ContractAddress *string   `json:"contractAddress"`
	Decimals        int32     `json:"decimals"`
	ExpectedAmount  string    `json:"expectedAmount"`
	PaymentURI      string    `json:"paymentUri"`
	ExpiresAt       time.Time `json:"expiresAt"`
}

func (h *Handler) depositAddress(w http.ResponseWriter, r *http.Request) error {
	res, err := call(r, h.s.Widget.GetDepositAddress)
	if err != nil {
		return err
	}
	data := depositAddressData{Address: res.Address, ChainID: res.ChainId, Currency: res.Currency, Decimals: res.Decimals,
		ExpectedAmount: res.ExpectedAmount, PaymentURI: res.PaymentUri, ExpiresAt: res.GetExpiresAt().AsTime()}
	if res.ContractAddress != "" {
		data.ContractAddress = &res.ContractAddress
	}
	envelope.Success(w, "Deposit address ready", data)
	return nil
}

type tokenJSON struct {
	Symbol          string `json:"symbol"`
	ContractAddress string `json:"contractAddress"`
	Decimals        int32  `json:"decimals"`
}

type chainJSON struct {
	ChainID        int64       `json:"chainId"`
	Name           string      `json:"name"`
	NativeSymbol   string      `json:"nativeSymbol"`
	NativeDecimals int32       `json:"nativeDecimals"`
	Confirmations  int32       `json:"confirmations"`
	Finalized      bool        `json:"finalized"`
	Tokens         []tokenJSON `json:"tokens"`
}

func (h *Handler) listChains(w http.ResponseWriter, r *http.Request) error {
	res, err := h.s.Chain.ListChains(r.Context(), &cofferv1.ListChainsRequest{})
	if err != nil {
		return err
	}
	out := make([]chainJSON, 0, len(res.Chains))
	for _, c := range res.Chains {
		cj := chainJSON{ChainID: c.ChainId, Name: c.Name, NativeSymbol: c.NativeSymbol, NativeDecimals: c.NativeDecimals,
			Confirmations: c.Confirmations, Finalized: c.Finalized, Tokens: []tokenJSON{}}
		for _, t := range c.Tokens {
			cj.Tokens = append(cj.Tokens, tokenJSON{Symbol: t.Symbol, ContractAddress: t.ContractAddress, Decimals: t.Decimals})
		}
		out = append(out, cj)
	}
	w.Header().Set("Cache-Control", "public, max-age=60")
	envelope.JSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) submitWithdrawal(w http.ResponseWriter, r *http.Request) error {
	res, err := call(r, h.s.Widget.SubmitWithdrawal)
	if err != nil {
		return err
	}
	envelope.Success(w, "Withdrawal submitted", struct {
		WithdrawRequestID string `json:"withdrawRequestId"`
		Status            string `json:"status"`
	}{res.WithdrawRequestId, shortEnum(res.Status)})
	return nil
}

type decisionData struct {
	WithdrawRequestID string  `json:"withdrawRequestId"`
	WithdrawStatus    string  `json:"withdrawStatus"`
	SettlementTxHash  string  `json:"settlementTxHash"`
	Held              bool    `json:"held"`
	HeldReason        *string `json:"heldReason"`
}

func (h *Handler) decideWithdrawal(w http.ResponseWriter, r *http.Request) error {
	res, err := callWithPath(r, h.s.Withdrawal.DecideWithdrawal, false,
		func(req *cofferv1.DecideWithdrawalRequest) { req.WithdrawRequestId = r.PathValue("id") }, "withdrawRequestId")
	if err != nil {
		return err
	}
	data := decisionData{WithdrawRequestID: res.WithdrawRequestId, WithdrawStatus: shortEnum(res.WithdrawStatus),
		SettlementTxHash: res.SettlementTxHash, Held: res.Held}
	if reason := shortEnum(res.HeldReason); reason != "" {
		data.HeldReason = &reason
	}
	envelope.Success(w, "Decision recorded", data)
	return nil
}

func (h *Handler) adminLogin(w http.ResponseWriter, r *http.Request) error {
	res, err := call(r, h.s.Admin.Login)
	if err != nil {
		return err
	}
	envelope.JSON(w, http.StatusOK, struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expiresAt"`
	}{res.Token, res.GetExpiresAt().AsTime()})
	return nil
}
