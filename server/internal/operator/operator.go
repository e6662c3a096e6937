// Package operator manages operators (platforms integrated with Coffer) for the service team,
// and authenticates operators by their key. The operator key is both the API credential and
// the webhook signing key: it is stored as a SHA-256 digest (lookup) and sealed under the
// master key (signing), and shown only when created or rotated.
package operator

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// KeyPrefix starts every operator key.
const KeyPrefix = "sk_"

// DefaultGrace is how long a rotated-out key keeps working.
const DefaultGrace = 24 * time.Hour

// Service is the operator service.
type Service struct {
	pool *pgxpool.Pool
	box  *secret.Box
	// currencies are the platform fiat currencies an operator may have (nil: USD only).
	currencies rates.FiatSet
}

// New returns the service.
func New(pool *pgxpool.Pool, box *secret.Box) *Service { return &Service{pool: pool, box: box} }

// SetCurrencies sets the platform fiat currencies operators may be given: those with a rate.
// Until it is called only USD is accepted.
func (s *Service) SetCurrencies(c rates.FiatSet) { s.currencies = c }

func keyContext(operatorID string) string { return "operator-key:" + operatorID }

// Create creates an operator and its first key, returned in clear this once.
func (s *Service) Create(ctx context.Context, in domain.OperatorSettings) (domain.Operator, string, error) {
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return domain.Operator{}, "", fault.Invalid("name", "is required")
	}
	if in.WebhookURL == nil {
		return domain.Operator{}, "", fault.Invalid("webhookUrl", "is required")
	}
	if err := s.normalize(&in); err != nil {
		return domain.Operator{}, "", err
	}
	id := uuid.NewString()
	var op domain.Operator
	var key string
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if in.ParentID != nil && *in.ParentID != "" {
			if _, err := q.GetOperator(ctx, *in.ParentID); errors.Is(err, store.ErrNotFound) {
				return fault.Invalid("parentId", "operator %s does not exist", *in.ParentID)
			} else if err != nil {
				return err
			}
		}
		var err error
		if op, err = q.InsertOperator(ctx, id, in); err != nil {
			return err
		}
		key, err = s.addKey(ctx, q, id)
		return err
	})
	if err != nil {
		return domain.Operator{}, "", asFault(err, "create operator")
	}
	return op, key, nil
}

func (s *Service) addKey(ctx context.Context, q *store.Queries, operatorID string) (string, error) {
	key := secret.Token(KeyPrefix)
	sealed := s.box.Seal([]byte(key), keyContext(operatorID))
	return key, q.InsertOperatorKey(ctx, operatorID, secret.Digest(key), sealed, Prefix(key))
}

// Prefix is the displayable start of a key, e.g. "sk_3f9a".
func Prefix(key string) string {
	if len(key) < len(KeyPrefix)+4 {
		return key
	}
	return key[:len(KeyPrefix)+4]
}

// Update applies the non-nil settings.
func (s *Service) Update(ctx context.Context, id string, in domain.OperatorSettings) (domain.Operator, error) {
	if in.Name != nil && strings.TrimSpace(*in.Name) == "" {
		return domain.Operator{}, fault.Invalid("name", "must not be empty")
	}
	if err := s.normalize(&in); err != nil {
		return domain.Operator{}, err
	}
	var op domain.Operator
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if _, err := q.GetOperator(ctx, id); err != nil {
			return err
		}
		if in.ParentID != nil && *in.ParentID != "" {
			if _, err := q.GetOperator(ctx, *in.ParentID); errors.Is(err, store.ErrNotFound) {
				return fault.Invalid("parentId", "operator %s does not exist", *in.ParentID)
			} else if err != nil {
				return err
			}
			tree, err := q.OperatorTree(ctx, id)
			if err != nil {
				return err
			}
			if slices.Contains(tree, *in.ParentID) {
				return fault.Invalid("parentId", "would make operator %s its own ancestor", id)
			}
		}
		var err error
		op, err = q.UpdateOperator(ctx, id, in)
		return err
	})
	return op, asFault(err, "update operator")
}

// Get returns an operator.
func (s *Service) Get(ctx context.Context, id string) (domain.Operator, error) {
	op, err := store.New(s.pool).GetOperator(ctx, id)
	return op, asFault(err, "get operator")
}

// List lists operators, or the direct children of parentID.
func (s *Service) List(ctx context.Context, parentID string) ([]domain.Operator, error) {
	ops, err := store.New(s.pool).ListOperators(ctx, parentID)
	return ops, asFault(err, "list operators")
}

// KeyPrefixes returns the prefixes of the operator's valid keys, newest first.
func (s *Service) KeyPrefixes(ctx context.Context, id string) ([]string, error) {
	keys, err := store.New(s.pool).ValidOperatorKeys(ctx, id)
	if err != nil {
		return nil, fault.Wrap(err, "list keys")
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Prefix
	}
	return out, nil
}

// RotateKey issues a new key; the current ones stay valid for grace (0 revokes them now).
func (s *Service) RotateKey(ctx context.Context, id string, grace time.Duration) (key string, previousExpiresAt time.Time, err error) {
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if _, err := q.GetOperator(ctx, id); err != nil {
			return err
		}
		if previousExpiresAt, err = q.ExpireCurrentKeys(ctx, id, grace); err != nil {
			return err
		}
		key, err = s.addKey(ctx, q, id)
		return err
	})
	return key, previousExpiresAt, asFault(err, "rotate key")
}

// Authenticate returns the operator owning a valid key. Inactive operators authenticate
// (they may still query and decide), but cannot open sessions or settle withdrawals.
func (s *Service) Authenticate(ctx context.Context, key string) (domain.Operator, error) {
	if !strings.HasPrefix(key, KeyPrefix) {
		return domain.Operator{}, fault.New(fault.Unauthenticated, "invalid operator key")
	}
	op, err := store.New(s.pool).OperatorByKeyDigest(ctx, secret.Digest(key))
	if errors.Is(err, store.ErrNotFound) {
		return domain.Operator{}, fault.New(fault.Unauthenticated, "invalid operator key")
	}
	if err != nil {
		return domain.Operator{}, fault.Wrap(err, "authenticate operator")
	}
	return op, nil
}

// SigningKeys returns the operator's valid keys in clear, newest first: webhooks are signed
// with each of them while a rotation is in progress.
func (s *Service) SigningKeys(ctx context.Context, operatorID string) ([][]byte, error) {
	keys, err := store.New(s.pool).ValidOperatorKeys(ctx, operatorID)
	if err != nil {
		return nil, fault.Wrap(err, "load signing keys")
	}
	out := make([][]byte, 0, len(keys))
	for _, k := range keys {
		key, err := s.box.Open(k.Sealed, keyContext(operatorID))
		if err != nil {
			return nil, fault.Wrap(err, "open key %d", k.ID)
		}
		out = append(out, key)
	}
	return out, nil
}

// Tree returns the ids of the operator and all its sub-operators.
func (s *Service) Tree(ctx context.Context, id string) ([]string, error) {
	ids, err := store.New(s.pool).OperatorTree(ctx, id)
	return ids, asFault(err, "operator tree")
}

func (s *Service) normalize(in *domain.OperatorSettings) error {
	if in.Name != nil {
		*in.Name = strings.TrimSpace(*in.Name)
	}
	if in.WebhookURL != nil {
		if err := checkURL(*in.WebhookURL); err != nil {
			return fault.Invalid("webhookUrl", "%s", err)
		}
	}
	if in.RedirectURL != nil && *in.RedirectURL != "" {
		if err := checkURL(*in.RedirectURL); err != nil {
			return fault.Invalid("redirectUrl", "%s", err)
		}
	}
	if in.ApprovalMode != nil {
		*in.ApprovalMode = domain.ApprovalMode(strings.ToUpper(string(*in.ApprovalMode)))
		if !slices.Contains(domain.ApprovalModes(), *in.ApprovalMode) {
			return fault.Invalid("approvalMode", "must be SYNC or EXTERNAL")
		}
	}
	if in.FiatCurrency != nil {
		code, ok, supported := rates.Priced(s.currencies, *in.FiatCurrency)
		if !ok {
			return fault.Invalid("fiatCurrency", "%s has no exchange rate here; supported currencies: %s",
				code, strings.Join(supported, ", "))
		}
		*in.FiatCurrency = code
	}
	for field, v := range map[string]*string{"perTxCap": in.PerTxCap, "dailyCap": in.DailyCap} {
		if v == nil || *v == "" {
			continue
		}
		if !capPattern.MatchString(*v) {
			return fault.Invalid(field, "must be a non-negative decimal such as \"500.00\" (at most 20 digits before the point "+
				"and 18 after), or empty for no cap")
		}
	}
	if in.DepositFeeBps != nil && (*in.DepositFeeBps < 0 || *in.DepositFeeBps > MaxDepositFeeBps) {
		return fault.Invalid("depositFeeBps", "must be between 0 and %d (%d%%)", MaxDepositFeeBps, MaxDepositFeeBps/100)
	}
	return nil
}

// capPattern is a cap as OpsService takes one (ops.proto) and the caps' column holds it
// (numeric(38, 18)), on every path, the CLI's included: plain digits, so that "1e-30" is not
// stored as a cap of 0, nor "1e80" refused by the database as an INTERNAL error.
var capPattern = regexp.MustCompile(`^[0-9]{1,20}(\.[0-9]{1,18})?$`)

// MaxDepositFeeBps is the highest deposit fee an operator may take. The fee comes out of
// the deposit before its sweep pays gas; near 100% a native deposit could never pay its own
// sweep and would never be credited, so at most half goes to the fee.
const MaxDepositFeeBps = 5000

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return errors.New("must be an absolute URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must use http or https")
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	return nil
}

func asFault(err error, what string) error {
	if err == nil {
		return nil
	}
	if fe, ok := errors.AsType[*fault.Error](err); ok {
		return fe
	}
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "operator not found")
	}
	return fault.Wrap(err, "%s", what)
}
