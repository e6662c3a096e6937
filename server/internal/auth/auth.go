// Package auth carries the authenticated caller through a request's context, parses Bearer
// credentials and decides what operators a caller may see (Scope, the one place). Who may
// call what is decided by the transports (see rpc and legacy), which authenticate through the
// operator and admin services.
package auth

import (
	"context"
	"net/http"
	"strings"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/tracing"
)

type operatorKey struct{}
type adminKey struct{}
type serviceTeamKey struct{}

// WithOperator records the authenticated operator.
func WithOperator(ctx context.Context, op domain.Operator) context.Context {
	tracing.SetOperator(ctx, op.ID)
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
	// Operators are an operator-bound admin's operator and its sub-operators, resolved at
	// authentication (nil for a service-team admin). What the admin sees is Scope().
	Operators []string
}

// WithAdmin records the authenticated admin.
func WithAdmin(ctx context.Context, a Admin) context.Context {
	tracing.SetOperator(ctx, a.OperatorID)
	return context.WithValue(ctx, adminKey{}, a)
}

// AdminFrom returns the authenticated admin; ok is false when the caller is not one.
func AdminFrom(ctx context.Context) (Admin, bool) {
	a, ok := ctx.Value(adminKey{}).(Admin)
	return a, ok
}

// WithServiceTeam records that the service team's ops token authenticated the call.
func WithServiceTeam(ctx context.Context) context.Context {
	return context.WithValue(ctx, serviceTeamKey{}, true)
}

func serviceTeam(ctx context.Context) bool {
	ok, _ := ctx.Value(serviceTeamKey{}).(bool)
	return ok
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
