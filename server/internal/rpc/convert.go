package rpc

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
)

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func operatorProto(o domain.Operator, keyPrefixes []string) *cofferv1.Operator {
	p := &cofferv1.Operator{
		Id:              o.ID,
		Name:            o.Name,
		ParentId:        o.ParentID,
		WebhookUrl:      o.WebhookURL,
		ApprovalMode:    approvalModes().proto(o.ApprovalMode),
		ApprovalEnabled: o.ApprovalEnabled,
		FiatCurrency:    o.FiatCurrency,
		RedirectUrl:     o.RedirectURL,
		ThemeSlug:       o.ThemeSlug,
		DepositFeeBps:   o.DepositFeeBps,
		Active:          o.Active,
		KeyPrefixes:     keyPrefixes,
		CreatedAt:       ts(o.CreatedAt),
		UpdatedAt:       ts(o.UpdatedAt),
	}
	if o.PerTxCap.Valid {
		p.PerTxCap = o.PerTxCap.Decimal.String()
	}
	if o.DailyCap.Valid {
		p.DailyCap = o.DailyCap.Decimal.String()
	}
	return p
}

// operatorSettings converts the proto settings to the store's partial update.
func operatorSettings(s *cofferv1.OperatorSettings) domain.OperatorSettings {
	out := domain.OperatorSettings{
		Name:            s.Name,
		ParentID:        s.ParentId,
		WebhookURL:      s.WebhookUrl,
		ApprovalEnabled: s.ApprovalEnabled,
		PerTxCap:        s.PerTxCap,
		DailyCap:        s.DailyCap,
		FiatCurrency:    s.FiatCurrency,
		RedirectURL:     s.RedirectUrl,
		ThemeSlug:       s.ThemeSlug,
		DepositFeeBps:   s.DepositFeeBps,
		Active:          s.Active,
	}
	if s.ApprovalMode != nil {
		if m := approvalModes().domain(*s.ApprovalMode); m != "" {
			out.ApprovalMode = &m
		}
	}
	return out
}

func adminProto(a domain.Admin) *cofferv1.Admin {
	return &cofferv1.Admin{Id: a.ID, Email: a.Email, OperatorId: a.OperatorID, TotpEnabled: a.TOTPSealed != nil, CreatedAt: ts(a.CreatedAt)}
}

func themeProto(t domain.Theme) *cofferv1.Theme {
	return &cofferv1.Theme{
		Id: t.ID, OperatorId: t.OperatorID, Slug: t.Slug, Name: t.Name,
		Style: &cofferv1.ThemeStyle{
			PrimaryColor: t.Style.PrimaryColor, BackgroundColor: t.Style.BackgroundColor, TextColor: t.Style.TextColor,
			LogoUrl: t.Style.LogoURL, BorderRadius: t.Style.BorderRadius, FontFamily: t.Style.FontFamily,
		},
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt),
	}
}

func themeStyle(s *cofferv1.ThemeStyle) domain.ThemeStyle {
	return domain.ThemeStyle{
		PrimaryColor: s.GetPrimaryColor(), BackgroundColor: s.GetBackgroundColor(), TextColor: s.GetTextColor(),
		LogoURL: s.GetLogoUrl(), BorderRadius: s.GetBorderRadius(), FontFamily: s.GetFontFamily(),
	}
}

func depositProto(d domain.Deposit) *cofferv1.Deposit {
	p := &cofferv1.Deposit{
		DepositId: d.ID, OperatorId: d.OperatorID, ExternalUserId: d.ExternalUserID, SessionRef: d.SessionRef,
		Status: depositStatuses().proto(d.Status), Type: cofferv1.DepositType_DEPOSIT_TYPE_NATIVE, ChainId: d.ChainID, Currency: d.Currency,
		ContractAddress: d.ContractAddress, TransactionHash: d.TxHash, LogIndex: d.LogIndex, Address: d.Address,
		GrossAmount: d.GrossAmount.String(), Manual: d.Manual, BlockNumber: blockNumber(d.BlockNumber), DetectedAt: ts(d.DetectedAt),
		SweepTxHash: d.SweepTxHash, Treasury: d.Treasury, ReplayedBy: string(d.ReplayedBy),
	}
	if d.ContractAddress != "" {
		p.Type = cofferv1.DepositType_DEPOSIT_TYPE_ERC20
	}
	if d.Amount != nil {
		p.Amount, p.FeeAmount = d.Amount.String(), d.FeeAmount.String()
	}
	if d.AmountInDollar.Valid {
		p.AmountInDollar = d.AmountInDollar.Decimal.StringFixed(6)
	}
	if d.ConfirmedAt != nil {
		p.ConfirmedAt = ts(*d.ConfirmedAt)
	}
	return p
}

func deliveryProto(e domain.WebhookEvent) *cofferv1.WebhookDelivery {
	d := &cofferv1.WebhookDelivery{EventId: e.ID, OperatorId: e.OperatorID, EventType: webhookEventTypes().proto(e.EventType),
		Url: e.LastURL, Attempts: e.Attempts, LastError: e.LastError, State: string(e.State), CreatedAt: ts(e.CreatedAt), Payload: e.Body}
	if e.LastAttemptAt != nil {
		d.LastAttemptAt = ts(*e.LastAttemptAt)
	}
	return d
}

// protos converts a list with one of the converters above; an empty list is nil, as a
// response's repeated field leaves it.
func protos[T, P any](list []T, of func(T) P) []P {
	if len(list) == 0 {
		return nil
	}
	out := make([]P, len(list))
	for i, t := range list {
		out[i] = of(t)
	}
	return out
}

func depositorProto(d domain.Depositor) *cofferv1.Depositor {
	return &cofferv1.Depositor{ExternalUserId: d.ExternalUserID, Email: d.Email, DepositAddress: d.Address, CreatedAt: ts(d.CreatedAt)}
}

// blockNumber is a block number as the API answers it (int64). Coffer stores block numbers in
// bigint columns, so every one it reads fits.
func blockNumber(n uint64) int64 {
	return int64(n) //nolint:gosec // G115: read from a bigint column, at most math.MaxInt64
}
