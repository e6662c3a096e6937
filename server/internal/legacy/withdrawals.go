package legacy

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/envelope"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// withdrawalItem is a withdrawal on the REST layer (GET /admin/withdrawals items, the PATCH
// answer): the spec's names, enums by their short names, times in RFC 3339, absent values null.
type withdrawalItem struct {
	WithdrawRequestID  string     `json:"withdrawRequestId"`
	Status             string     `json:"status"`
	OperatorID         string     `json:"operatorId"`
	SessionRef         string     `json:"sessionRef"`
	ExternalUserID     string     `json:"externalUserId"`
	Type               string     `json:"type"`
	ApprovalMode       string     `json:"approvalMode"`
	Address            string     `json:"address"`
	ChainID            int64      `json:"chainId"`
	CryptoCurrencyCode string     `json:"cryptoCurrencyCode"`
	FiatCurrencyCode   string     `json:"fiatCurrencyCode"`
	FiatAmount         string     `json:"fiatAmount"`
	CryptoAmountSent   string     `json:"cryptoAmountSent"`
	AmountInUSD        *string    `json:"amountInUsd"`
	SettlementTxHash   *string    `json:"settlementTxHash"`
	HeldReason         *string    `json:"heldReason"`
	AdminNote          string     `json:"adminNote"`
	RequestedAt        time.Time  `json:"requestedAt"`
	UpdatedAt          time.Time  `json:"updatedAt"`
	CompletedAt        *time.Time `json:"completedAt"`
	ExpiresAt          time.Time  `json:"expiresAt"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func withdrawalJSON(w *cofferv1.Withdrawal) withdrawalItem {
	it := withdrawalItem{WithdrawRequestID: w.GetWithdrawRequestId(), Status: shortEnum(w.GetStatus()), OperatorID: w.GetOperatorId(),
		SessionRef: w.GetSessionRef(), ExternalUserID: w.GetExternalUserId(), Type: shortEnum(w.GetType()),
		ApprovalMode: strings.ToLower(shortEnum(w.GetApprovalMode())), Address: w.GetAddress(), ChainID: w.GetChainId(),
		CryptoCurrencyCode: w.GetCryptoCurrencyCode(), FiatCurrencyCode: w.GetFiatCurrencyCode(), FiatAmount: w.GetFiatAmount(),
		CryptoAmountSent: w.GetCryptoAmountSent(), AmountInUSD: optional(w.GetAmountInUsd()),
		SettlementTxHash: optional(w.GetSettlementTxHash()), HeldReason: optional(shortEnum(w.GetHeldReason())),
		AdminNote: w.GetAdminNote(), RequestedAt: w.GetRequestedAt().AsTime().UTC(), UpdatedAt: w.GetUpdatedAt().AsTime().UTC(),
		ExpiresAt: w.GetExpiresAt().AsTime().UTC()}
	if w.CompletedAt != nil {
		t := w.GetCompletedAt().AsTime().UTC()
		it.CompletedAt = &t
	}
	return it
}

// listWithdrawalsQuery reads GET /admin/withdrawals' query: status (repeatable or
// comma-separated), operatorId, externalUserId, from and to (RFC 3339, creation time),
// limit (1..200) and pageToken (from the previous page's X-Next-Page-Token header).
func listWithdrawalsQuery(q url.Values) (*cofferv1.ListWithdrawalsRequest, error) {
	for name := range q {
		if !slices.Contains([]string{"status", "operatorId", "externalUserId", "from", "to", "limit", "pageToken"}, name) {
			return nil, fault.Invalid(name, "unknown query parameter; use status, operatorId, externalUserId, from, to, limit or pageToken")
		}
	}
	if err := onceParams(q); err != nil {
		return nil, err
	}
	req := &cofferv1.ListWithdrawalsRequest{OperatorId: q.Get("operatorId"), ExternalUserId: q.Get("externalUserId"),
		PageToken: q.Get("pageToken")}
	var err error
	if req.Statuses, err = queryStatuses[cofferv1.WithdrawalStatus](q); err != nil {
		return nil, err
	}
	if req.CreatedAfter, req.CreatedBefore, err = queryRange(q); err != nil {
		return nil, err
	}
	if req.PageSize, err = queryLimit(q); err != nil {
		return nil, err
	}
	return req, rpc.Validate(req)
}

func (h *Handler) listWithdrawals(w http.ResponseWriter, r *http.Request) error {
	req, err := listWithdrawalsQuery(r.URL.Query())
	if err != nil {
		return err
	}
	res, err := h.s.Admin.ListWithdrawals(r.Context(), req)
	if err != nil {
		return err
	}
	items := make([]withdrawalItem, 0, len(res.Withdrawals))
	for _, wd := range res.Withdrawals {
		items = append(items, withdrawalJSON(wd))
	}
	if res.NextPageToken != "" {
		w.Header().Set("X-Next-Page-Token", res.NextPageToken)
	}
	envelope.JSON(w, http.StatusOK, items)
	return nil
}

func (h *Handler) updateWithdrawalStatus(w http.ResponseWriter, r *http.Request) error {
	res, err := callWithPath(r, h.s.Admin.UpdateWithdrawalStatus, false,
		func(req *cofferv1.UpdateWithdrawalStatusRequest) { req.WithdrawRequestId = r.PathValue("id") }, "withdrawRequestId")
	if err != nil {
		return err
	}
	if res.Withdrawal == nil {
		return fault.New(fault.Internal, "no withdrawal returned")
	}
	envelope.JSON(w, http.StatusOK, withdrawalJSON(res.Withdrawal))
	return nil
}
