package legacy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/envelope"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// The operator's reconciliation reads (DESIGN.md "Operator reconciliation API"): GET /deposits,
// GET /deposits/{depositId}, GET /withdrawals and GET /withdrawals/{withdrawRequestId}, in the
// spec's envelope; lists as data: {items, nextCursor}.

// depositItem is a deposit on the REST layer: the DEPOSIT webhook's fields first (spec
// "### DEPOSIT"), then its status and times; absent values are null.
type depositItem struct {
	DepositID             int64      `json:"depositId"`
	IdempotencyKey        string     `json:"idempotencyKey"`
	ExternalUserID        string     `json:"externalUserId"`
	SessionRef            *string    `json:"sessionRef"`
	SessionAmount         *string    `json:"sessionAmount"`
	Amount                *string    `json:"amount"`
	AmountInDollar        *string    `json:"amountInDollar"`
	AmountInLocalCurrency *string    `json:"amountInLocalCurrency"`
	LocalCurrencyCode     *string    `json:"localCurrencyCode"`
	CurrentRate           *string    `json:"currentRate"`
	Pair                  *string    `json:"pair"`
	GrossAmount           string     `json:"grossAmount"`
	FeeAmount             *string    `json:"feeAmount"`
	FeeInDollar           *string    `json:"feeInDollar"`
	Type                  string     `json:"type"`
	ContractAddress       *string    `json:"contractAddress"`
	TransactionHash       string     `json:"transactionHash"`
	ChainID               int64      `json:"chainId"`
	ConfirmedAt           *time.Time `json:"confirmedAt"`
	OperatorReference     *string    `json:"operatorReference"`
	Status                string     `json:"status"`
	OperatorID            string     `json:"operatorId"`
	Currency              string     `json:"currency"`
	Address               string     `json:"address"`
	BlockNumber           int64      `json:"blockNumber"`
	LogIndex              int64      `json:"logIndex"`
	SweepTxHash           *string    `json:"sweepTxHash"`
	Manual                bool       `json:"manual"`
	Treasury              bool       `json:"treasury"`
	DetectedAt            *time.Time `json:"detectedAt"`
	CreditedAt            *time.Time `json:"creditedAt"`
}

func timeOf(t *timestamppb.Timestamp) *time.Time {
	if t == nil {
		return nil
	}
	u := t.AsTime().UTC()
	return &u
}

func depositJSON(d *cofferv1.OperatorDeposit) depositItem {
	return depositItem{DepositID: d.GetDepositId(), IdempotencyKey: d.GetIdempotencyKey(), ExternalUserID: d.GetExternalUserId(),
		SessionRef: d.SessionRef, SessionAmount: d.SessionAmount, Amount: d.Amount, AmountInDollar: d.AmountInDollar,
		AmountInLocalCurrency: d.AmountInLocalCurrency, LocalCurrencyCode: d.LocalCurrencyCode, CurrentRate: d.CurrentRate,
		Pair: d.Pair, GrossAmount: d.GetGrossAmount(), FeeAmount: d.FeeAmount, FeeInDollar: d.FeeInDollar,
		Type: shortEnum(d.GetType()), ContractAddress: d.ContractAddress, TransactionHash: d.GetTransactionHash(),
		ChainID: d.GetChainId(), ConfirmedAt: timeOf(d.GetConfirmedAt()), OperatorReference: d.OperatorReference,
		Status: shortEnum(d.GetStatus()), OperatorID: d.GetOperatorId(), Currency: d.GetCurrency(), Address: d.GetAddress(),
		BlockNumber: d.GetBlockNumber(), LogIndex: d.GetLogIndex(), SweepTxHash: d.SweepTxHash, Manual: d.GetManual(),
		Treasury: d.GetTreasury(), DetectedAt: timeOf(d.GetDetectedAt()), CreditedAt: timeOf(d.GetCreditedAt())}
}

// pageJSON is a list's data: the items and the cursor of the next page (null on the last one).
type pageJSON[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

// protoEnum is a generated protobuf enum type (a list's status).
type protoEnum interface {
	~int32
	Descriptor() protoreflect.EnumDescriptor
}

// listQuery is the query of GET /deposits and GET /withdrawals, with statuses of type E.
type listQuery[E protoEnum] struct {
	operatorID, externalUserID, cursor string
	statuses                           []E
	chainID                            int64
	from, to                           *timestamppb.Timestamp
	limit                              int32
}

// parseListQuery reads a list's query: externalUserId, status (repeatable or comma-separated,
// one of E's), chainId, from and to (RFC 3339), limit (1..200), cursor (nextCursor of the
// previous page) and operatorId (a sub-operator). Any other parameter is INVALID_ARGUMENT.
func parseListQuery[E protoEnum](q url.Values, route string) (listQuery[E], error) {
	var lq listQuery[E]
	if err := knownParams(q, route, "externalUserId", "status", "chainId", "from", "to", "limit", "cursor", "operatorId"); err != nil {
		return lq, err
	}
	lq.operatorID, lq.externalUserID, lq.cursor = q.Get("operatorId"), q.Get("externalUserId"), q.Get("cursor")
	var err error
	if lq.statuses, err = queryStatuses[E](q); err != nil {
		return lq, err
	}
	if raw := q.Get("chainId"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 1 {
			return lq, fault.Invalid("chainId", "must be a positive integer chain id")
		}
		lq.chainID = n
	}
	if lq.from, lq.to, err = queryRange(q); err != nil {
		return lq, err
	}
	if lq.limit, err = queryLimit(q); err != nil {
		return lq, err
	}
	return lq, nil
}

// queryStatuses reads status (repeatable or comma-separated, each one of E's short names);
// nil when absent.
func queryStatuses[E protoEnum](q url.Values) ([]E, error) {
	var out []E
	statuses := E(0).Descriptor()
	names := enumNames(statuses)
	for _, raw := range q["status"] {
		for s := range strings.SplitSeq(raw, ",") {
			s = strings.ToUpper(strings.TrimSpace(s))
			if !slices.Contains(names, s) {
				return nil, fault.Invalid("status", "must be one of %s", strings.Join(names, ", "))
			}
			out = append(out, E(statuses.Values().ByName(protoreflect.Name(enumPrefix(statuses)+s)).Number()))
		}
	}
	return out, nil
}

// queryRange reads from and to (RFC 3339); an absent one is nil.
func queryRange(q url.Values) (from, to *timestamppb.Timestamp, err error) {
	for _, p := range []struct {
		name string
		dst  **timestamppb.Timestamp
	}{{"from", &from}, {"to", &to}} {
		if raw := q.Get(p.name); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil {
				return nil, nil, fault.Invalid(p.name, "must be an RFC 3339 time such as 2026-01-31T00:00:00Z")
			}
			*p.dst = timestamppb.New(t)
		}
	}
	return from, to, nil
}

// queryLimit reads limit (1..200); 0 when absent.
func queryLimit(q url.Values) (int32, error) {
	raw := q.Get("limit")
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 1 || n > 200 {
		return 0, fault.Invalid("limit", "must be an integer from 1 to 200")
	}
	return int32(n), nil
}

// listFields renames the list request fields an error names to the REST layer's parameters.
func listFields(err error) error {
	names := map[string]string{"pageToken": "cursor", "pageSize": "limit", "detectedAfter": "from",
		"detectedBefore": "to", "createdAfter": "from", "createdBefore": "to", "statuses": "status"}
	if fe, ok := errors.AsType[*fault.Error](err); ok {
		if name, ok := names[fe.Field]; ok {
			out := *fe
			out.Field = name
			out.Message = strings.Replace(out.Message, fe.Field+":", name+":", 1)
			return &out
		}
	}
	return err
}

// knownParams refuses a query parameter that route does not take, by name, and one given
// more than once (onceParams).
func knownParams(q url.Values, route string, params ...string) error {
	for name := range q {
		if !slices.Contains(params, name) {
			return fault.Invalid(name, "unknown query parameter; %s takes %s", route, strings.Join(params, ", "))
		}
	}
	return onceParams(q)
}

// onceParams refuses a query parameter given twice, status excepted (repeatable, read as
// one list): url.Values.Get reads the first and drops the rest, so ?externalUserId=a&
// externalUserId=b would answer a's records alone as if they were all that was asked for.
func onceParams(q url.Values) error {
	for name, values := range q {
		if len(values) > 1 && name != "status" {
			return fault.Invalid(name, "given more than once; only status may be repeated")
		}
	}
	return nil
}

func nextCursor(token string) *string {
	if token == "" {
		return nil
	}
	return &token
}

// list serves a list: the query decoded into the operation's request (build), validated, the
// call made, and its items (with the next page's token) written as data: {items, nextCursor}.
func list[E protoEnum, Req proto.Message, Res, Item any](w http.ResponseWriter, r *http.Request, route string,
	build func(listQuery[E]) Req, call func(context.Context, Req) (Res, error), page func(Res) ([]Item, string), message string) error {
	lq, err := parseListQuery[E](r.URL.Query(), route)
	if err != nil {
		return err
	}
	req := build(lq)
	if err := rpc.Validate(req); err != nil {
		return listFields(err)
	}
	res, err := call(r.Context(), req)
	if err != nil {
		return listFields(err)
	}
	items, next := page(res)
	envelope.Success(w, message, pageJSON[Item]{items, nextCursor(next)})
	return nil
}

// get serves the GET of one record: no query parameter but operatorId, the request built from
// the path (build) and validated, the call made and its record written as data.
func get[Req proto.Message, Res, Item any](w http.ResponseWriter, r *http.Request, route string, build func() (Req, error),
	call func(context.Context, Req) (Res, error), item func(Res) Item, message string) error {
	if err := knownParams(r.URL.Query(), route, "operatorId"); err != nil {
		return err
	}
	req, err := build()
	if err != nil {
		return err
	}
	if err := rpc.Validate(req); err != nil {
		return err
	}
	res, err := call(r.Context(), req)
	if err != nil {
		return err
	}
	envelope.Success(w, message, item(res))
	return nil
}

// each maps a list's items.
func each[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// listDeposits is GET /deposits.
func (h *Handler) listDeposits(w http.ResponseWriter, r *http.Request) error {
	return list(w, r, "GET /deposits",
		func(lq listQuery[cofferv1.DepositStatus]) *cofferv1.DepositServiceListDepositsRequest {
			return &cofferv1.DepositServiceListDepositsRequest{OperatorId: lq.operatorID, ExternalUserId: lq.externalUserID,
				Statuses: lq.statuses, ChainId: lq.chainID, DetectedAfter: lq.from,
				DetectedBefore: lq.to, PageSize: lq.limit, PageToken: lq.cursor}
		}, h.s.Deposit.ListDeposits,
		func(res *cofferv1.DepositServiceListDepositsResponse) ([]depositItem, string) {
			return each(res.Deposits, depositJSON), res.NextPageToken
		}, "Deposits")
}

// getDeposit is GET /deposits/{depositId}[?operatorId=<sub-operator>].
func (h *Handler) getDeposit(w http.ResponseWriter, r *http.Request) error {
	return get(w, r, "GET /deposits/{depositId}", func() (*cofferv1.GetDepositRequest, error) {
		id, err := strconv.ParseInt(r.PathValue("depositId"), 10, 64)
		if err != nil || id < 1 {
			return nil, fault.Invalid("depositId", "must be a positive integer deposit id")
		}
		return &cofferv1.GetDepositRequest{DepositId: id, OperatorId: r.URL.Query().Get("operatorId")}, nil
	}, h.s.Deposit.GetDeposit, func(res *cofferv1.GetDepositResponse) depositItem { return depositJSON(res.GetDeposit()) }, "Deposit")
}

// listOwnWithdrawals is GET /withdrawals (the operator's; GET /admin/withdrawals is the panel's).
func (h *Handler) listOwnWithdrawals(w http.ResponseWriter, r *http.Request) error {
	return list(w, r, "GET /withdrawals",
		func(lq listQuery[cofferv1.WithdrawalStatus]) *cofferv1.WithdrawalServiceListWithdrawalsRequest {
			return &cofferv1.WithdrawalServiceListWithdrawalsRequest{OperatorId: lq.operatorID, ExternalUserId: lq.externalUserID,
				Statuses: lq.statuses, ChainId: lq.chainID, CreatedAfter: lq.from,
				CreatedBefore: lq.to, PageSize: lq.limit, PageToken: lq.cursor}
		}, h.s.Withdrawal.ListWithdrawals,
		func(res *cofferv1.WithdrawalServiceListWithdrawalsResponse) ([]withdrawalItem, string) {
			return each(res.Withdrawals, withdrawalJSON), res.NextPageToken
		}, "Withdrawals")
}

// getOwnWithdrawal is GET /withdrawals/{withdrawRequestId}[?operatorId=<sub-operator>].
func (h *Handler) getOwnWithdrawal(w http.ResponseWriter, r *http.Request) error {
	return get(w, r, "GET /withdrawals/{withdrawRequestId}", func() (*cofferv1.GetWithdrawalRequest, error) {
		return &cofferv1.GetWithdrawalRequest{WithdrawRequestId: r.PathValue("withdrawRequestId"), OperatorId: r.URL.Query().Get("operatorId")}, nil
	}, h.s.Withdrawal.GetWithdrawal, func(res *cofferv1.GetWithdrawalResponse) withdrawalItem { return withdrawalJSON(res.GetWithdrawal()) },
		"Withdrawal")
}
