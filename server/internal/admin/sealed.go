package admin

// TOTPContext is the seal context of an admin's TOTP secret (admins.totp_sealed): `coffer keys
// rotate-master` re-seals it under the same context.
func TOTPContext(adminID string) string { return totpContext(adminID) }
