package operator

// KeyContext is the seal context of an operator's keys (operator_keys.sealed): `coffer keys
// rotate-master` re-seals them under the same context.
func KeyContext(operatorID string) string { return keyContext(operatorID) }
