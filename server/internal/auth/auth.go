// Package auth carries the authenticated caller through a request's context and parses
// Bearer credentials. Who may call what is decided by the transports (see rpc and legacy),
// which authenticate through the operator and admin services.
package auth

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/cofferhq/coffer/server/internal/domain"
)

type operatorKey struct{}
type adminKey struct{}

// WithOperator records the authenticated operator.
func WithOperator(ctx context.Context, op domain.Operator) context.Context {
	return context.WithValue(ctx, operatorKey{}, op)
}

// Operator returns the authenticated operator; ok is false when the caller is not one.
func Operator(ctx context.Context) (domain.Operator, bool) {
	op, ok := ctx.Value(operatorKey{}).(domain.Operator)
	return op, ok
}

// Admin is an authenticated panel admin with the token it used.
type Admin struct {
	domain.Admin
	Token string
	// Scope is the operator ids the admin may see; nil for a service-team admin (all).
	Scope []string
}

// WithAdmin records the authenticated admin.
func WithAdmin(ctx context.Context, a Admin) context.Context {
	return context.WithValue(ctx, adminKey{}, a)
}

// AdminFrom returns the authenticated admin; ok is false when the caller is not one.
func AdminFrom(ctx context.Context) (Admin, bool) {
	a, ok := ctx.Value(adminKey{}).(Admin)
	return a, ok
}

// Bearer extracts the credential of an "Authorization: Bearer <credential>" header.
func Bearer(h http.Header) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

// CanSee reports whether the admin's scope includes the operator.
func (a Admin) CanSee(operatorID string) bool {
	if a.Scope == nil {
		return true
	}
	for _, id := range a.Scope {
		if id == operatorID {
			return true
		}
	}
	return false
}

// Narrow is the operators a listing covers: the one asked for (operatorID), which must be in
// scope, or the whole scope (nil: every operator). ok is false when the operator asked for is
// out of scope (callers answer NOT_FOUND, not to reveal it).
func Narrow(scope []string, operatorID string) (ids []string, ok bool) {
	if operatorID == "" {
		return scope, true
	}
	if scope != nil && !slices.Contains(scope, operatorID) {
		return nil, false
	}
	return []string{operatorID}, true
}
