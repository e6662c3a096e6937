// Package ident checks the identifiers an operator gives Coffer to echo back (externalUserId,
// operatorReference) beyond their protovalidate rules of length and characters: rules every
// path that takes one, to write or to filter, must apply alike.
package ident

import (
	"strings"
	"unicode"

	sdkwebhook "github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// NotNull refuses the literal "null" as an identifier the webhooks echo: it is how they write
// a missing value, and the spec tells receivers to read it as absent, so a user "null" would
// reach the operator as a DEPOSIT for no user.
func NotNull(field, value string) error {
	if value == sdkwebhook.Null {
		return fault.Invalid(field, "must not be \"null\": webhooks write a missing value that way, so the operator would read it as absent")
	}
	return nil
}

// UserID checks an externalUserId: it must not be "null" (see NotNull) nor blank. An id of
// white space or invisible characters alone shows as nothing on every screen and in the
// webhooks the operator reads; no user of an operator has one, so it can only be the
// operator's bug.
func UserID(value string) error {
	if err := NotNull("externalUserId", value); err != nil {
		return err
	}
	if Blank(value) {
		return fault.Invalid("externalUserId", "must not be blank: white space and invisible characters alone name no user")
	}
	return nil
}

// UserFilter checks an externalUserId a list is filtered by: absent ("") lists every user's;
// one no user can have (see UserID) is refused rather than answered with an empty list, which
// would read as "this user has none".
func UserFilter(value string) error {
	if value == "" {
		return nil
	}
	return UserID(value)
}

// Reference checks an optional operatorReference: absent ("") is no reference; a present one
// follows UserID's rules, since a blank one would name, and deduplicate, sessions by nothing
// the operator can see.
func Reference(value string) error {
	if value == "" {
		return nil
	}
	if err := NotNull("operatorReference", value); err != nil {
		return err
	}
	if Blank(value) {
		return fault.Invalid("operatorReference", "must not be blank: leave it out for no reference")
	}
	return nil
}

// Blank reports whether s is empty or holds only white space and invisible format characters
// (U+200B ZERO WIDTH SPACE, U+FEFF, ...).
func Blank(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) }) < 0
}
