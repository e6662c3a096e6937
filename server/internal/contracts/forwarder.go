// Code generated via abigen V2 - DO NOT EDIT.
// This file is a generated binding and any manual changes will be lost.

package contracts

import (
	"bytes"
	"errors"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Reference imports to suppress errors if they are not otherwise used.
var (
	_ = bytes.Equal
	_ = errors.New
	_ = big.NewInt
	_ = common.Big1
	_ = types.BloomLookup
	_ = abi.ConvertType
)

// ForwarderMetaData contains all meta data concerning the Forwarder contract.
var ForwarderMetaData = bind.MetaData{
	ABI: "[{\"inputs\":[],\"name\":\"LengthMismatch\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"to\",\"type\":\"address\"}],\"name\":\"PaymentFailed\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"Rejected\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"burn\",\"outputs\":[],\"stateMutability\":\"pure\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"addresspayable[]\",\"name\":\"to\",\"type\":\"address[]\"},{\"internalType\":\"uint256[]\",\"name\":\"amounts\",\"type\":\"uint256[]\"}],\"name\":\"forward\",\"outputs\":[],\"stateMutability\":\"payable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"addresspayable[]\",\"name\":\"to\",\"type\":\"address[]\"},{\"internalType\":\"uint256[]\",\"name\":\"amounts\",\"type\":\"uint256[]\"},{\"internalType\":\"bool[]\",\"name\":\"rejected\",\"type\":\"bool[]\"}],\"name\":\"forwardRejecting\",\"outputs\":[],\"stateMutability\":\"payable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"token\",\"type\":\"address\"},{\"internalType\":\"address[]\",\"name\":\"to\",\"type\":\"address[]\"},{\"internalType\":\"uint256[]\",\"name\":\"amounts\",\"type\":\"uint256[]\"}],\"name\":\"forwardTokens\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"addresspayable\",\"name\":\"to\",\"type\":\"address\"},{\"internalType\":\"bool\",\"name\":\"thenRevert\",\"type\":\"bool\"}],\"name\":\"pay\",\"outputs\":[],\"stateMutability\":\"payable\",\"type\":\"function\"},{\"stateMutability\":\"payable\",\"type\":\"receive\"}]",
	ID:  "Forwarder",
	Bin: "0x6080604052348015600e575f5ffd5b5061072d8061001c5f395ff3fe60806040526004361061004c575f3560e01c806319971045146100575780631bfd97221461006c57806344df8e701461007f578063911a0dfc14610093578063a9d0de5b146100b2575f5ffd5b3661005357005b5f5ffd5b61006a6100653660046104a3565b6100c5565b005b61006a61007a366004610542565b6101d5565b34801561008a575f5ffd5b5061006a610259565b34801561009e575f5ffd5b5061006a6100ad3660046105c5565b61025f565b61006a6100c0366004610654565b6103ae565b84831415806100d45750848114155b156100f5576040516001621398b960e31b0319815260040160405180910390fd5b5f5b858110156101cc573063a9d0de5b8686848181106101175761011761068b565b905060200201358989858181106101305761013061068b565b9050602002016020810190610145919061069f565b8686868181106101575761015761068b565b905060200201602081019061016c91906106c1565b6040516001600160e01b031960e086901b1681526001600160a01b039092166004830152151560248201526044015f604051808303818588803b1580156101b1575f5ffd5b505af1935050505080156101c3575060015b506001016100f7565b50505050505050565b8281146101f8576040516001621398b960e31b0319815260040160405180910390fd5b5f5b838110156102525761024a8585838181106102175761021761068b565b905060200201602081019061022c919061069f565b84848481811061023e5761023e61068b565b905060200201356103db565b6001016101fa565b5050505050565b5b61025a565b828114610282576040516001621398b960e31b0319815260040160405180910390fd5b5f5b838110156103a657856001600160a01b031663a9059cbb8686848181106102ad576102ad61068b565b90506020020160208101906102c2919061069f565b8585858181106102d4576102d461068b565b6040516001600160e01b031960e087901b1681526001600160a01b03909416600485015260200291909101356024830152506044016020604051808303815f875af1158015610325573d5f5f3e3d5ffd5b505050506040513d601f19601f8201168201806040525081019061034991906106dc565b61039e5784848281811061035f5761035f61068b565b9050602002016020810190610374919061069f565b6040516306d133c960e31b81526001600160a01b0390911660048201526024015b60405180910390fd5b600101610284565b505050505050565b6103b882346103db565b80156103d75760405163efde6dcf60e01b815260040160405180910390fd5b5050565b5f826001600160a01b0316826040515f6040518083038185875af1925050503d805f8114610424576040519150601f19603f3d011682016040523d82523d5f602084013e610429565b606091505b5050905080610456576040516306d133c960e31b81526001600160a01b0384166004820152602401610395565b505050565b5f5f83601f84011261046b575f5ffd5b50813567ffffffffffffffff811115610482575f5ffd5b6020830191508360208260051b850101111561049c575f5ffd5b9250929050565b5f5f5f5f5f5f606087890312156104b8575f5ffd5b863567ffffffffffffffff8111156104ce575f5ffd5b6104da89828a0161045b565b909750955050602087013567ffffffffffffffff8111156104f9575f5ffd5b61050589828a0161045b565b909550935050604087013567ffffffffffffffff811115610524575f5ffd5b61053089828a0161045b565b979a9699509497509295939492505050565b5f5f5f5f60408587031215610555575f5ffd5b843567ffffffffffffffff81111561056b575f5ffd5b6105778782880161045b565b909550935050602085013567ffffffffffffffff811115610596575f5ffd5b6105a28782880161045b565b95989497509550505050565b6001600160a01b03811681146105c2575f5ffd5b50565b5f5f5f5f5f606086880312156105d9575f5ffd5b85356105e4816105ae565b9450602086013567ffffffffffffffff8111156105ff575f5ffd5b61060b8882890161045b565b909550935050604086013567ffffffffffffffff81111561062a575f5ffd5b6106368882890161045b565b969995985093965092949392505050565b80151581146105c2575f5ffd5b5f5f60408385031215610665575f5ffd5b8235610670816105ae565b9150602083013561068081610647565b809150509250929050565b634e487b7160e01b5f52603260045260245ffd5b5f602082840312156106af575f5ffd5b81356106ba816105ae565b9392505050565b5f602082840312156106d1575f5ffd5b81356106ba81610647565b5f602082840312156106ec575f5ffd5b81516106ba8161064756fea2646970667358221220b4e1de9107f9ae4016dcff45021effa55738ad9d7688e821772dca58f27875bd64736f6c63430008250033",
}

// Forwarder is an auto generated Go binding around an Ethereum contract.
type Forwarder struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *Forwarder) GetABI() abi.ABI {
	return c.abi
}

// NewForwarder creates a new instance of Forwarder.
func NewForwarder() *Forwarder {
	parsed, err := ForwarderMetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &Forwarder{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *Forwarder) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackBurn is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x44df8e70.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function burn() pure returns()
func (forwarder *Forwarder) PackBurn() []byte {
	enc, err := forwarder.abi.Pack("burn")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackBurn is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x44df8e70.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function burn() pure returns()
func (forwarder *Forwarder) TryPackBurn() ([]byte, error) {
	return forwarder.abi.Pack("burn")
}

// PackForward is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1bfd9722.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function forward(address[] to, uint256[] amounts) payable returns()
func (forwarder *Forwarder) PackForward(to []common.Address, amounts []*big.Int) []byte {
	enc, err := forwarder.abi.Pack("forward", to, amounts)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackForward is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1bfd9722.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function forward(address[] to, uint256[] amounts) payable returns()
func (forwarder *Forwarder) TryPackForward(to []common.Address, amounts []*big.Int) ([]byte, error) {
	return forwarder.abi.Pack("forward", to, amounts)
}

// PackForwardRejecting is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x19971045.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function forwardRejecting(address[] to, uint256[] amounts, bool[] rejected) payable returns()
func (forwarder *Forwarder) PackForwardRejecting(to []common.Address, amounts []*big.Int, rejected []bool) []byte {
	enc, err := forwarder.abi.Pack("forwardRejecting", to, amounts, rejected)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackForwardRejecting is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x19971045.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function forwardRejecting(address[] to, uint256[] amounts, bool[] rejected) payable returns()
func (forwarder *Forwarder) TryPackForwardRejecting(to []common.Address, amounts []*big.Int, rejected []bool) ([]byte, error) {
	return forwarder.abi.Pack("forwardRejecting", to, amounts, rejected)
}

// PackForwardTokens is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x911a0dfc.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function forwardTokens(address token, address[] to, uint256[] amounts) returns()
func (forwarder *Forwarder) PackForwardTokens(token common.Address, to []common.Address, amounts []*big.Int) []byte {
	enc, err := forwarder.abi.Pack("forwardTokens", token, to, amounts)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackForwardTokens is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x911a0dfc.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function forwardTokens(address token, address[] to, uint256[] amounts) returns()
func (forwarder *Forwarder) TryPackForwardTokens(token common.Address, to []common.Address, amounts []*big.Int) ([]byte, error) {
	return forwarder.abi.Pack("forwardTokens", token, to, amounts)
}

// PackPay is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa9d0de5b.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function pay(address to, bool thenRevert) payable returns()
func (forwarder *Forwarder) PackPay(to common.Address, thenRevert bool) []byte {
	enc, err := forwarder.abi.Pack("pay", to, thenRevert)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackPay is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa9d0de5b.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function pay(address to, bool thenRevert) payable returns()
func (forwarder *Forwarder) TryPackPay(to common.Address, thenRevert bool) ([]byte, error) {
	return forwarder.abi.Pack("pay", to, thenRevert)
}

// UnpackError attempts to decode the provided error data using user-defined
// error definitions.
func (forwarder *Forwarder) UnpackError(raw []byte) (any, error) {
	if bytes.Equal(raw[:4], forwarder.abi.Errors["LengthMismatch"].ID.Bytes()[:4]) {
		return forwarder.UnpackLengthMismatchError(raw[4:])
	}
	if bytes.Equal(raw[:4], forwarder.abi.Errors["PaymentFailed"].ID.Bytes()[:4]) {
		return forwarder.UnpackPaymentFailedError(raw[4:])
	}
	if bytes.Equal(raw[:4], forwarder.abi.Errors["Rejected"].ID.Bytes()[:4]) {
		return forwarder.UnpackRejectedError(raw[4:])
	}
	return nil, errors.New("Unknown error")
}

// ForwarderLengthMismatch represents a LengthMismatch error raised by the Forwarder contract.
type ForwarderLengthMismatch struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error LengthMismatch()
func ForwarderLengthMismatchErrorID() common.Hash {
	return common.HexToHash("0xff633a3803c58b9bc21e58efecee59f27e033cc0b1883fccb4969c76146fe60f")
}

// UnpackLengthMismatchError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error LengthMismatch()
func (forwarder *Forwarder) UnpackLengthMismatchError(raw []byte) (*ForwarderLengthMismatch, error) {
	out := new(ForwarderLengthMismatch)
	if err := forwarder.abi.UnpackIntoInterface(out, "LengthMismatch", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// ForwarderPaymentFailed represents a PaymentFailed error raised by the Forwarder contract.
type ForwarderPaymentFailed struct {
	To common.Address
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error PaymentFailed(address to)
func ForwarderPaymentFailedErrorID() common.Hash {
	return common.HexToHash("0x36899e48161ee4504f5f89aa55f7aed73460d464cb62f64e03057df7dbcdd0aa")
}

// UnpackPaymentFailedError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error PaymentFailed(address to)
func (forwarder *Forwarder) UnpackPaymentFailedError(raw []byte) (*ForwarderPaymentFailed, error) {
	out := new(ForwarderPaymentFailed)
	if err := forwarder.abi.UnpackIntoInterface(out, "PaymentFailed", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// ForwarderRejected represents a Rejected error raised by the Forwarder contract.
type ForwarderRejected struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error Rejected()
func ForwarderRejectedErrorID() common.Hash {
	return common.HexToHash("0xefde6dcf3c2196c5705e848c09f0659d33de3ca0248be3ab40852d1bafc0f1e3")
}

// UnpackRejectedError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error Rejected()
func (forwarder *Forwarder) UnpackRejectedError(raw []byte) (*ForwarderRejected, error) {
	out := new(ForwarderRejected)
	if err := forwarder.abi.UnpackIntoInterface(out, "Rejected", raw); err != nil {
		return nil, err
	}
	return out, nil
}
