package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// ReorgedProto is a reorged deposit as the API answers it (the CLI prints the same).
func ReorgedProto(r deposit.Reorged) *cofferv1.ReorgedDeposit {
	p := &cofferv1.ReorgedDeposit{ReorgId: r.ID, Deposit: depositProto(r.Deposit), ForkBlock: blockNumber(r.ForkBlock),
		BlockNumber: blockNumber(r.BlockNumber), BlockHash: r.BlockHash, PriorStatus: depositStatuses().proto(r.PriorStatus),
		ReversedAmount: r.Reversed.String(), DetectedAt: ts(r.DetectedAt), ReincludedBlock: blockNumber(r.ReincludedBlock),
		Resolution: reorgResolutions().proto(r.Resolution), ResolvedBy: string(r.ResolvedBy), Note: r.Note}
	if r.ResolvedAt != nil {
		p.ResolvedAt = ts(*r.ResolvedAt)
	}
	for _, a := range r.History {
		p.History = append(p.History, &cofferv1.ReorgAction{Action: a.Action, Actor: string(a.Actor), Note: a.Note, CreatedAt: ts(a.CreatedAt)})
	}
	return p
}

// ListReorgedDeposits lists reorged deposits of every operator (the caller's scope's: an
// admin's for AdminService.ListDepositReorgs).
func (s *OpsServer) ListReorgedDeposits(ctx context.Context, req *cofferv1.ListReorgedDepositsRequest) (*cofferv1.ListReorgedDepositsResponse, error) {
	scope, err := auth.Scope(ctx, auth.OwnOperator())
	if err != nil {
		return nil, err
	}
	list, next, err := s.Deposits.ListReorgs(ctx, scope, req.GetOperatorId(), req.GetIncludeResolved(), int(req.GetPageSize()), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return ReorgsProto(list, next), nil
}

// ReorgsProto is a page of reorged deposits as ListReorgedDeposits answers it (the CLI prints
// the same).
func ReorgsProto(list []deposit.Reorged, next string) *cofferv1.ListReorgedDepositsResponse {
	return &cofferv1.ListReorgedDepositsResponse{Items: protos(list, ReorgedProto), NextPageToken: next}
}

// ResolveReorgedDeposit applies the service team's resolution.
func (s *OpsServer) ResolveReorgedDeposit(ctx context.Context, req *cofferv1.ResolveReorgedDepositRequest) (*cofferv1.ResolveReorgedDepositResponse, error) {
	r, err := s.Deposits.ResolveReorg(ctx, deposit.Resolution{DepositID: req.GetDepositId(),
		Resolution: string(reorgResolutions().domain(req.GetResolution())), Note: req.GetNote(),
		Actor: domain.ServiceTeamActor("ops-api")})
	if err != nil {
		return nil, err
	}
	return &cofferv1.ResolveReorgedDepositResponse{Item: ReorgedProto(r)}, nil
}

// ListDepositReorgs lists the reorged deposits in the admin's scope, as
// OpsService.ListReorgedDeposits.
func (s *AdminServer) ListDepositReorgs(ctx context.Context, req *cofferv1.ListDepositReorgsRequest) (*cofferv1.ListDepositReorgsResponse, error) {
	res, err := s.ops().ListReorgedDeposits(ctx, &cofferv1.ListReorgedDepositsRequest{OperatorId: req.GetOperatorId(),
		IncludeResolved: req.GetIncludeResolved(), PageSize: req.GetPageSize(), PageToken: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.ListDepositReorgsResponse{Items: res.GetItems(), NextPageToken: res.GetNextPageToken()}, nil
}
