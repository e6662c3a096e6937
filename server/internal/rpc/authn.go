package rpc

import (
	"context"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Authenticator resolves Bearer credentials. The Connect interceptors and the REST layer both
// use it, so a credential means the same on every path: a missing or invalid credential is
// UNAUTHENTICATED; a valid credential of the wrong kind (an admin token on an operator
// endpoint, the operator key on /admin) is FORBIDDEN.
type Authenticator struct {
	Operators *operator.Service
	Admins    *admin.Service
	// OpsToken is the service team's token for OpsService; empty disables OpsService.
	OpsToken string
}

func kindOf(cred string) string {
	switch {
	case strings.HasPrefix(cred, operator.KeyPrefix):
		return "the operator key"
	case strings.HasPrefix(cred, admin.TokenPrefix):
		return "an admin token"
	}
	return ""
}

// Operator authenticates an operator key and records the operator in the context.
func (a *Authenticator) Operator(ctx context.Context, h http.Header) (context.Context, error) {
	cred, ok := auth.Bearer(h)
	if !ok {
		return ctx, fault.New(fault.Unauthenticated, "missing credential: send Authorization: Bearer <operator key>")
	}
	if k := kindOf(cred); k != "" && k != "the operator key" {
		return ctx, fault.New(fault.Forbidden, "%s is not accepted here: send the operator key", k)
	}
	op, err := a.Operators.Authenticate(ctx, cred)
	if err != nil {
		return ctx, err
	}
	return auth.WithOperator(ctx, op), nil
}

// Admin authenticates an admin token and records the admin in the context.
func (a *Authenticator) Admin(ctx context.Context, h http.Header) (context.Context, error) {
	cred, ok := auth.Bearer(h)
	if !ok {
		return ctx, fault.New(fault.Unauthenticated, "missing credential: send Authorization: Bearer <admin token> from /admin/login")
	}
	if k := kindOf(cred); k != "" && k != "an admin token" {
		return ctx, fault.New(fault.Forbidden, "%s is not accepted on admin endpoints: log in to the panel", k)
	}
	adm, err := a.Admins.Authenticate(ctx, cred)
	if err != nil {
		return ctx, err
	}
	return auth.WithAdmin(ctx, adm), nil
}

// Ops checks the service team's token.
func (a *Authenticator) Ops(ctx context.Context, h http.Header) (context.Context, error) {
	cred, ok := auth.Bearer(h)
	if !ok {
		return ctx, fault.New(fault.Unauthenticated, "missing credential: send Authorization: Bearer <ops token>")
	}
	if a.OpsToken == "" || !secret.Equal(cred, a.OpsToken) {
		if k := kindOf(cred); k != "" {
			return ctx, fault.New(fault.Forbidden, "%s is not accepted on the ops API", k)
		}
		return ctx, fault.New(fault.Unauthenticated, "invalid ops token")
	}
	return ctx, nil
}

// authInterceptor authenticates unary calls with check, except the procedures in public.
func authInterceptor(check func(context.Context, http.Header) (context.Context, error), public ...string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			for _, p := range public {
				if req.Spec().Procedure == p {
					return next(ctx, req)
				}
			}
			ctx, err := check(ctx, req.Header())
			if err != nil {
				return nil, err
			}
			return next(ctx, req)
		}
	}
}

// callerOperator is the operator an authenticated operator call runs as.
func callerOperator(ctx context.Context) (store.Operator, error) {
	op, ok := auth.Operator(ctx)
	if !ok {
		return op, fault.New(fault.Unauthenticated, "operator credential required")
	}
	return op, nil
}

// callerAdmin is the admin an authenticated admin call runs as.
func callerAdmin(ctx context.Context) (auth.Admin, error) {
	a, ok := auth.AdminFrom(ctx)
	if !ok {
		return a, fault.New(fault.Unauthenticated, "admin credential required")
	}
	return a, nil
}
