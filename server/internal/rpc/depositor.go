package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/depositor"
)

// DepositorServer implements coffer.v1.DepositorService.
type DepositorServer struct {
	Depositors *depositor.Service
}

// CreateDepositor registers a depositor.
func (s *DepositorServer) CreateDepositor(ctx context.Context, req *cofferv1.CreateDepositorRequest) (*cofferv1.CreateDepositorResponse, error) {
	op, err := callerOperator(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.Depositors.Create(ctx, op, req.GetExternalUserId(), req.GetEmail())
	if err != nil {
		return nil, err
	}
	return &cofferv1.CreateDepositorResponse{Depositor: depositorProto(c.Depositor), Created: c.Created,
		EmailChange: emailChanges().proto(c.Email)}, nil
}

// CheckDepositor tells whether a depositor exists.
func (s *DepositorServer) CheckDepositor(ctx context.Context, req *cofferv1.CheckDepositorRequest) (*cofferv1.CheckDepositorResponse, error) {
	op, err := callerOperator(ctx)
	if err != nil {
		return nil, err
	}
	d, exists, err := s.Depositors.Check(ctx, op, req.GetExternalUserId())
	if err != nil {
		return nil, err
	}
	res := &cofferv1.CheckDepositorResponse{Exists: exists}
	if exists {
		res.Depositor = depositorProto(d)
	}
	return res, nil
}
