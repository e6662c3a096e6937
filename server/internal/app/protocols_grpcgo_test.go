// The grpc-go legs of TestSessionFlowOnEveryProtocol: the reference gRPC implementation calls
// the Connect handlers with ClientConn.Invoke (no generated grpc-go stubs needed).

package app_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
)

// dialGRPC connects grpc-go to the test server: plaintext HTTP/2 (h2c) on loopback.
func dialGRPC(t *testing.T, env *apptest.Env) *grpc.ClientConn {
	t.Helper()
	return dialGRPCAt(t, env.URL)
}

func dialGRPCAt(t *testing.T, base string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(base, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// grpcGoClient calls the API with grpc-go's ClientConn.Invoke and the generated protobuf
// messages; no grpc-go stubs are generated for Coffer.
type grpcGoClient struct{ conn *grpc.ClientConn }

func (c *grpcGoClient) CreateDepositSession(ctx context.Context, bearer string, req *cofferv1.CreateDepositSessionRequest) (*cofferv1.CreateDepositSessionResponse, error) {
	if bearer != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bearer)
	}
	res := new(cofferv1.CreateDepositSessionResponse)
	return res, c.conn.Invoke(ctx, cofferv1connect.SessionServiceCreateDepositSessionProcedure, req, res)
}

func (c *grpcGoClient) GetSession(ctx context.Context, req *cofferv1.GetSessionRequest) (*cofferv1.GetSessionResponse, error) {
	res := new(cofferv1.GetSessionResponse)
	return res, c.conn.Invoke(ctx, cofferv1connect.WidgetServiceGetSessionProcedure, req, res)
}

func (c *grpcGoClient) GetDepositAddress(ctx context.Context, req *cofferv1.GetDepositAddressRequest) (*cofferv1.GetDepositAddressResponse, error) {
	res := new(cofferv1.GetDepositAddressResponse)
	return res, c.conn.Invoke(ctx, cofferv1connect.WidgetServiceGetDepositAddressProcedure, req, res)
}

// ErrorInfo reads the status and its ErrorInfo detail the way a grpc-go user would. gRPC and
// Connect number their codes the same way.
func (c *grpcGoClient) ErrorInfo(err error) (connect.Code, string) {
	st, ok := status.FromError(err)
	if !ok {
		return connect.CodeUnknown, ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return connect.Code(st.Code()), info.GetReason()
		}
	}
	return connect.Code(st.Code()), ""
}

// grpcGoReflectServices lists the server's services with grpc-go's reflection v1 client.
func grpcGoReflectServices(ctx context.Context, t *testing.T, env *apptest.Env) []string {
	t.Helper()
	stream, err := reflectionv1.NewServerReflectionClient(dialGRPCAt(t, env.InternalURL)).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{ListServices: "*"},
	}); err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatalf("reflection: %v", err)
	}
	if e := res.GetErrorResponse(); e != nil {
		t.Fatalf("reflection error %d: %s", e.GetErrorCode(), e.GetErrorMessage())
	}
	var names []string
	for _, s := range res.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("reflection stream end: %v, want EOF", err)
	}
	return names
}
