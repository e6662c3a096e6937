package fault

import (
	"slices"
	"testing"

	"github.com/cofferhq/coffer/sdk/go/coffer"
)

// TestSDKKnowsEveryCode: the Go SDK's typed codes are exactly the codes the server answers,
// so an operator can switch on a constant for every one.
func TestSDKKnowsEveryCode(t *testing.T) {
	t.Parallel()
	var server []coffer.Code
	for c := Code(1); c.String() != ""; c++ {
		server = append(server, coffer.Code(c.String()))
	}
	sdk := coffer.Codes()
	slices.Sort(server)
	slices.Sort(sdk)
	if !slices.Equal(server, sdk) {
		t.Fatalf("server codes %v\nSDK codes    %v", server, sdk)
	}
}
