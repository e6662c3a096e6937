package domain

import (
	"time"

	"github.com/shopspring/decimal"
)

// ApprovalMode is how an operator's withdrawals are approved (operators.approval_mode and,
// as it was when the withdrawal was made, withdrawals.approval_mode).
type ApprovalMode string

// The two modes (DESIGN.md: SYNC default | EXTERNAL).
const (
	// ApprovalSync: the operator answers the WITHDRAW_REQUEST webhook at once; admins finalize
	// (mode A).
	ApprovalSync ApprovalMode = "SYNC"
	// ApprovalExternal: the operator decides later through POST /withdraw/:id/decision (mode B).
	ApprovalExternal ApprovalMode = "EXTERNAL"
)

// ApprovalModes lists both modes. It is a new slice each call: a caller may not change the set.
func ApprovalModes() []ApprovalMode {
	return []ApprovalMode{ApprovalSync, ApprovalExternal}
}

// Operator is a platform that uses Coffer (or one of its sub-operators).
type Operator struct {
	ID              string
	ParentID        string
	Name            string
	WebhookURL      string
	ApprovalMode    ApprovalMode
	ApprovalEnabled bool
	PerTxCap        decimal.NullDecimal
	DailyCap        decimal.NullDecimal
	FiatCurrency    string
	RedirectURL     string
	ThemeSlug       string
	DepositFeeBps   int32
	Active          bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// OperatorSettings are the fields an operator create or update sets (nil: left as it is).
type OperatorSettings struct {
	Name            *string
	ParentID        *string
	WebhookURL      *string
	ApprovalMode    *ApprovalMode
	ApprovalEnabled *bool
	PerTxCap        *string
	DailyCap        *string
	FiatCurrency    *string
	RedirectURL     *string
	ThemeSlug       *string
	DepositFeeBps   *int32
	Active          *bool
}

// Depositor is an operator's user known to Coffer.
type Depositor struct {
	OperatorID     string
	ExternalUserID string
	Email          string
	// Address is the deposit address assigned to the user (EIP-55), "" until one is asked for.
	Address   string
	CreatedAt time.Time
}

// Admin is a panel user: the service team (no OperatorID) or an operator's admin.
type Admin struct {
	ID           string
	Email        string
	PasswordHash string
	TOTPSealed   []byte
	OperatorID   string
	Active       bool
	CreatedAt    time.Time
}

// ThemeStyle is a widget theme's look.
type ThemeStyle struct {
	PrimaryColor    string `json:"primaryColor"`
	BackgroundColor string `json:"backgroundColor"`
	TextColor       string `json:"textColor"`
	LogoURL         string `json:"logoUrl,omitempty"`
	BorderRadius    int32  `json:"borderRadius"`
	FontFamily      string `json:"fontFamily,omitempty"`
}

// Theme is an operator's named widget theme.
type Theme struct {
	ID         string
	OperatorID string
	Slug       string
	Name       string
	Style      ThemeStyle
	CreatedAt  time.Time
	UpdatedAt  time.Time
}
