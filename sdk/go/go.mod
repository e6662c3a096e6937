// The Go SDK for Coffer operators: its own module, depending on the generated API code only
// (no go-ethereum, pgx or River reach an operator's build).
module github.com/cofferhq/coffer/sdk/go

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/cofferhq/coffer/gen/go v0.1.0
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260904194346-d0f1323225a4
	google.golang.org/protobuf v1.36.12
)

require buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go v1.36.12-20260825204119-511051f7f437.1 // indirect

// Inside this repository the SDK builds against the generated code beside it; a release tags
// gen/go/vX.Y.Z and sdk/go/vX.Y.Z together.
replace github.com/cofferhq/coffer/gen/go => ../../gen/go
