// The generated Go code is its own module so that operators (and the Go SDK) depend on the
// API's messages and clients only, not on the server's dependencies.
module github.com/cofferhq/coffer/gen/go

go 1.26.0

require (
	buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go v1.36.12-20260825204119-511051f7f437.1
	connectrpc.com/connect v1.21.1
	google.golang.org/protobuf v1.36.12
)
