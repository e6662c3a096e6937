package fault

import (
	"fmt"
	"runtime/debug"
)

// Recovered is the answer to a request whose handler panicked: INTERNAL to the caller (one bug
// must not cost the caller its connection or a client its retry logic), the panic value and
// its stack to the log through the cause.
func Recovered(p any) *Error {
	return &Error{Code: Internal, Message: "internal error", Cause: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
}
