// Package app assembles a Coffer process from its configuration: the PostgreSQL pool, the
// service layer, River, and the HTTP server that carries the Connect services, the REST
// compatibility layer, health checks and metrics.
package app

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/depositor"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/rpc"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/theme"
)

// Services is the service layer; the transports, the CLI and `coffer dev` share it.
type Services struct {
	Operators  *operator.Service
	Admins     *admin.Service
	Sessions   *session.Service
	Depositors *depositor.Service
	Themes     *theme.Service
	Chains     *chain.Registry
}

// NewServices builds the service layer on a pool.
func NewServices(pool *pgxpool.Pool, box *secret.Box, chains *chain.Registry, sessions session.Config) *Services {
	return &Services{
		Operators:  operator.New(pool, box),
		Admins:     admin.New(pool, box),
		Sessions:   session.New(pool, sessions),
		Depositors: depositor.New(pool),
		Themes:     theme.New(pool),
		Chains:     chains,
	}
}

// servers binds the Connect handlers to the services.
func (s *Services) servers() rpc.Servers {
	return rpc.Servers{
		Session:    &rpc.SessionServer{Sessions: s.Sessions, Operators: s.Operators},
		Depositor:  &rpc.DepositorServer{Depositors: s.Depositors},
		Chain:      &rpc.ChainServer{Chains: s.Chains},
		Widget:     &rpc.WidgetServer{Sessions: s.Sessions, Operators: s.Operators, Themes: s.Themes},
		Withdrawal: &rpc.WithdrawalServer{},
		Admin:      &rpc.AdminServer{Admins: s.Admins, Themes: s.Themes},
		Ops:        &rpc.OpsServer{Operators: s.Operators, Admins: s.Admins},
	}
}
