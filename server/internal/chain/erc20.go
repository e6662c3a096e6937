package chain

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
)

// ERC20Transfer is the calldata of transfer(to, amount).
func ERC20Transfer(to common.Address, amount *big.Int) []byte {
	data := make([]byte, 4+32+32)
	copy(data, []byte{0xa9, 0x05, 0x9c, 0xbb})
	copy(data[4+12:], to.Bytes())
	amount.FillBytes(data[4+32:])
	return data
}

// ERC20TransferAmount reads the amount back from transfer calldata (nil if it is not one).
func ERC20TransferAmount(data []byte) *big.Int {
	if len(data) != 68 {
		return nil
	}
	return new(big.Int).SetBytes(data[36:])
}

// TokenBalance is an ERC20's balanceOf(owner) at the latest block.
func (c *Client) TokenBalance(ctx context.Context, token, owner common.Address) (*big.Int, error) {
	return c.tokenBalance(ctx, token, owner, nil)
}

// TokenBalanceAt is an ERC20's balanceOf(owner) after the given block.
func (c *Client) TokenBalanceAt(ctx context.Context, token, owner common.Address, block uint64) (*big.Int, error) {
	return c.tokenBalance(ctx, token, owner, new(big.Int).SetUint64(block))
}

func (c *Client) tokenBalance(ctx context.Context, token, owner common.Address, block *big.Int) (*big.Int, error) {
	data := make([]byte, 4+32)
	copy(data, []byte{0x70, 0xa0, 0x82, 0x31})
	copy(data[4+12:], owner.Bytes())
	out, err := c.CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, block)
	if err != nil {
		return nil, err
	}
	if len(out) < 32 {
		return nil, fmt.Errorf("balanceOf answered %d bytes", len(out))
	}
	return new(big.Int).SetBytes(out[:32]), nil
}
