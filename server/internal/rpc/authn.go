package rpc

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
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

// otherKind names the kind of a valid credential that is not of the kind wanted ("the
// operator key", "an admin token", "the ops token"), or "" when cred is valid for no other
// kind. Only failed authentications pay for these lookups.
func (a *Authenticator) otherKind(ctx context.Context, cred, wanted string) string {
	if wanted != "ops" && a.OpsToken != "" && secret.Equal(cred, a.OpsToken) {
		return "the ops token"
	}
	if wanted != "operator" && strings.HasPrefix(cred, operator.KeyPrefix) {
		if _, err := a.Operators.Authenticate(ctx, cred); err == nil {
			return "the operator key"
		}
	}
	if wanted != "admin" && strings.HasPrefix(cred, admin.TokenPrefix) {
		if _, err := a.Admins.Authenticate(ctx, cred); err == nil {
			return "an admin token"
		}
	}
	return ""
}

// Operator authenticates an operator key and records the operator in the context.
func (a *Authenticator) Operator(ctx context.Context, h http.Header) (context.Context, error) {
	return bearer(ctx, a, h, "operator", "<operator key>", "here: send the operator key", a.Operators.Authenticate, auth.WithOperator)
}

// Admin authenticates an admin token and records the admin in the context.
func (a *Authenticator) Admin(ctx context.Context, h http.Header) (context.Context, error) {
	return bearer(ctx, a, h, "admin", "<admin token> from /admin/login", "on admin endpoints: log in to the panel",
		a.Admins.Authenticate, auth.WithAdmin)
}

// Ops checks the service team's token.
func (a *Authenticator) Ops(ctx context.Context, h http.Header) (context.Context, error) {
	check := func(_ context.Context, cred string) (struct{}, error) {
		if a.OpsToken == "" || !secret.Equal(cred, a.OpsToken) {
			return struct{}{}, fault.New(fault.Unauthenticated, "invalid ops token")
		}
		return struct{}{}, nil
	}
	return bearer(ctx, a, h, "ops", "<ops token>", "on the ops API", check,
		func(ctx context.Context, _ struct{}) context.Context { return auth.WithServiceTeam(ctx) })
}

// bearer authenticates the Bearer credential as one kind of credential (otherKind's wanted)
// with check, and records its holder in the context with with. No credential is
// UNAUTHENTICATED, telling how to send one (hint); a credential check refuses that is valid
// for another kind is FORBIDDEN ("<that kind> is not accepted <where>").
func bearer[T any](ctx context.Context, a *Authenticator, h http.Header, kind, hint, where string,
	check func(context.Context, string) (T, error), with func(context.Context, T) context.Context) (context.Context, error) {
	cred, ok := auth.Bearer(h)
	if !ok {
		return ctx, fault.New(fault.Unauthenticated, "missing credential: send Authorization: Bearer %s", hint)
	}
	holder, err := check(ctx, cred)
	if err != nil {
		if k := a.otherKind(ctx, cred, kind); k != "" {
			return ctx, fault.New(fault.Forbidden, "%s is not accepted %s", k, where)
		}
		return ctx, err
	}
	return with(ctx, holder), nil
}

// authInterceptor authenticates every call of a service, unary and streaming, with check,
// except the procedures in public.
type authInterceptor struct {
	check  func(context.Context, http.Header) (context.Context, error)
	public []string
}

func newAuthInterceptor(check func(context.Context, http.Header) (context.Context, error), public ...string) authInterceptor {
	return authInterceptor{check: check, public: public}
}

func (i authInterceptor) authenticate(ctx context.Context, procedure string, h http.Header) (context.Context, error) {
	if slices.Contains(i.public, procedure) {
		return ctx, nil
	}
	return i.check(ctx, h)
}

func (i authInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		ctx, err := i.authenticate(ctx, req.Spec().Procedure, req.Header())
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (i authInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// StreamRecheck is how often an open stream's credential is checked again: a stream (a
// SubscribeEvents follow) may stay open for hours, and a key revoked or rotated out (or an
// admin disabled) must stop being served within this long, not when the client goes.
const StreamRecheck = 5 * time.Second

func (i authInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if slices.Contains(i.public, conn.Spec().Procedure) {
			return next(ctx, conn)
		}
		actx, err := i.check(ctx, conn.RequestHeader())
		if err != nil {
			return err
		}
		sctx, cancel := context.WithCancelCause(actx)
		defer cancel(nil)
		go i.recheck(sctx, cancel, conn.RequestHeader())
		err = next(sctx, conn)
		if sctx.Err() != nil && ctx.Err() == nil {
			return context.Cause(sctx) // the credential lapsed mid-stream: the client is told why
		}
		return err
	}
}

// recheck checks the stream's credential every StreamRecheck until ctx ends, and ends the
// stream (cancel with the refusal) once it is refused. Only a refusal ends it: a check that
// fails for another reason (the database briefly down) is tried again at the next tick.
func (i authInterceptor) recheck(ctx context.Context, cancel context.CancelCauseFunc, h http.Header) {
	t := time.NewTicker(StreamRecheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := i.check(ctx, h); fault.Is(err, fault.Unauthenticated) || fault.Is(err, fault.Forbidden) {
			cancel(err)
			return
		}
	}
}

// callerOperator is the operator an authenticated operator call runs as.
func callerOperator(ctx context.Context) (domain.Operator, error) {
	op, ok := auth.Operator(ctx)
	if !ok {
		return op, fault.New(fault.Unauthenticated, "operator credential required")
	}
	return op, nil
}

// callerReach is the calling operator with the scope its key reaches (auth.Scope).
func callerReach(ctx context.Context, reach auth.Reach) (domain.Operator, domain.Scope, error) {
	op, err := callerOperator(ctx)
	if err != nil {
		return op, domain.Scope{}, err
	}
	scope, err := auth.Scope(ctx, reach)
	return op, scope, err
}

// callerAdmin is the admin an authenticated admin call runs as.
func callerAdmin(ctx context.Context) (auth.Admin, error) {
	a, ok := auth.AdminFrom(ctx)
	if !ok {
		return a, fault.New(fault.Unauthenticated, "admin credential required")
	}
	return a, nil
}
