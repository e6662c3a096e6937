package domain

import "strings"

// Actor names who caused a change in an audit trail (withdrawal transitions, fund entries,
// reorg actions): "admin:<admin id>", "operator:<operator id>", "service-team:<channel>",
// "system" or "user". It is stored as text and shown to admins as is; a withdrawal's trail
// also names an admin actor by the admin's email (WithdrawalAuditEntry.actor_display).
type Actor string

// The kinds of actor, the part before the colon.
const (
	ActorAdmin       = "admin"
	ActorOperator    = "operator"
	ActorServiceTeam = "service-team"
)

// The actors without an id.
const (
	// System is the service itself: a job or a rule (expiry, payout confirmation, crediting).
	System Actor = "system"
	// User is the operator's user, acting in the widget.
	User Actor = "user"
)

// AdminActor is a panel admin, by admin id.
func AdminActor(adminID string) Actor { return Actor(ActorAdmin + ":" + adminID) }

// OperatorActor is an operator's server, by operator id.
func OperatorActor(operatorID string) Actor { return Actor(ActorOperator + ":" + operatorID) }

// ServiceTeamActor is the service team acting through a channel other than the panel (the
// ops API, the CLI).
func ServiceTeamActor(channel string) Actor { return Actor(ActorServiceTeam + ":" + channel) }

// Kind is the part before the colon (the whole actor when it has none).
func (a Actor) Kind() string {
	kind, _, _ := strings.Cut(string(a), ":")
	return kind
}

// ID is the part after the colon ("" when there is none).
func (a Actor) ID() string {
	_, id, _ := strings.Cut(string(a), ":")
	return id
}

// IsAdmin reports whether a panel admin acted.
func (a Actor) IsAdmin() bool { return a.Kind() == ActorAdmin }
