package proctest

import (
	"context"

	"connectrpc.com/connect"
)

// Bearer authenticates every Connect call with a token (an operator key, an admin session, the
// ops token).
func Bearer(token string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	}
}
