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
	ABI: "[{\"inputs\":[],\"name\":\"LengthMismatch\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"to\",\"type\":\"address\"}],\"name\":\"PaymentFailed\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"Rejected\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"addresspayable[]\",\"name\":\"to\",\"type\":\"address[]\"},{\"internalType\":\"uint256[]\",\"name\":\"amounts\",\"type\":\"uint256[]\"}],\"name\":\"forward\",\"outputs\":[],\"stateMutability\":\"payable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"addresspayable[]\",\"name\":\"to\",\"type\":\"address[]\"},{\"internalType\":\"uint256[]\",\"name\":\"amounts\",\"type\":\"uint256[]\"},{\"internalType\":\"bool[]\",\"name\":\"rejected\",\"type\":\"bool[]\"}],\"name\":\"forwardRejecting\",\"outputs\":[],\"stateMutability\":\"payable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"token\",\"type\":\"address\"},{\"internalType\":\"address[]\",\"name\":\"to\",\"type\":\"address[]\"},{\"internalType\":\"uint256[]\",\"name\":\"amounts\",\"type\":\"uint256[]\"}],\"name\":\"forwardTokens\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"addresspayable\",\"name\":\"to\",\"type\":\"address\"},{\"internalType\":\"bool\",\"name\":\"thenRevert\",\"type\":\"bool\"}],\"name\":\"pay\",\"outputs\":[],\"stateMutability\":\"payable\",\"type\":\"function\"},{\"stateMutability\":\"payable\",\"type\":\"receive\"}]",
	ID:  "Forwarder",
	Bin: "0x6080604052348015600e575f5ffd5b506107088061001c5f395ff3fe608060405260043610610041575f3560e01c8063199710451461004c5780631bfd972214610061578063911a0dfc14610074578063a9d0de5b14610093575f5ffd5b3661004857005b5f5ffd5b61005f61005a36600461047e565b6100a6565b005b61005f61006f36600461051d565b6101b6565b34801561007f575f5ffd5b5061005f61008e3660046105a0565b61023a565b61005f6100a136600461062f565b610389565b84831415806100b55750848114155b156100d6576040516001621398b960e31b0319815260040160405180910390fd5b5f5b858110156101ad573063a9d0de5b8686848181106100f8576100f8610666565b9050602002013589898581811061011157610111610666565b9050602002016020810190610126919061067a565b86868681811061013857610138610666565b905060200201602081019061014d919061069c565b6040516001600160e01b031960e086901b1681526001600160a01b039092166004830152151560248201526044015f604051808303818588803b158015610192575f5ffd5b505af1935050505080156101a4575060015b506001016100d8565b50505050505050565b8281146101d9576040516001621398b960e31b0319815260040160405180910390fd5b5f5b838110156102335761022b8585838181106101f8576101f8610666565b905060200201602081019061020d919061067a565b84848481811061021f5761021f610666565b905060200201356103b6565b6001016101db565b5050505050565b82811461025d576040516001621398b960e31b0319815260040160405180910390fd5b5f5b8381101561038157856001600160a01b031663a9059cbb86868481811061028857610288610666565b905060200201602081019061029d919061067a565b8585858181106102af576102af610666565b6040516001600160e01b031960e087901b1681526001600160a01b03909416600485015260200291909101356024830152506044016020604051808303815f875af1158015610300573d5f5f3e3d5ffd5b505050506040513d601f19601f8201168201806040525081019061032491906106b7565b6103795784848281811061033a5761033a610666565b905060200201602081019061034f919061067a565b6040516306d133c960e31b81526001600160a01b0390911660048201526024015b60405180910390fd5b60010161025f565b505050505050565b61039382346103b6565b80156103b25760405163efde6dcf60e01b815260040160405180910390fd5b5050565b5f826001600160a01b0316826040515f6040518083038185875af1925050503d805f81146103ff576040519150601f19603f3d011682016040523d82523d5f602084013e610404565b606091505b5050905080610431576040516306d133c960e31b81526001600160a01b0384166004820152602401610370565b505050565b5f5f83601f840112610446575f5ffd5b50813567ffffffffffffffff81111561045d575f5ffd5b6020830191508360208260051b8501011115610477575f5ffd5b9250929050565b5f5f5f5f5f5f60608789031215610493575f5ffd5b863567ffffffffffffffff8111156104a9575f5ffd5b6104b589828a01610436565b909750955050602087013567ffffffffffffffff8111156104d4575f5ffd5b6104e089828a01610436565b909550935050604087013567ffffffffffffffff8111156104ff575f5ffd5b61050b89828a01610436565b979a9699509497509295939492505050565b5f5f5f5f60408587031215610530575f5ffd5b843567ffffffffffffffff811115610546575f5ffd5b61055287828801610436565b909550935050602085013567ffffffffffffffff811115610571575f5ffd5b61057d87828801610436565b95989497509550505050565b6001600160a01b038116811461059d575f5ffd5b50565b5f5f5f5f5f606086880312156105b4575f5ffd5b85356105bf81610589565b9450602086013567ffffffffffffffff8111156105da575f5ffd5b6105e688828901610436565b909550935050604086013567ffffffffffffffff811115610605575f5ffd5b61061188828901610436565b969995985093965092949392505050565b801515811461059d575f5ffd5b5f5f60408385031215610640575f5ffd5b823561064b81610589565b9150602083013561065b81610622565b809150509250929050565b634e487b7160e01b5f52603260045260245ffd5b5f6020828403121561068a575f5ffd5b813561069581610589565b9392505050565b5f602082840312156106ac575f5ffd5b813561069581610622565b5f602082840312156106c7575f5ffd5b81516106958161062256fea2646970667358221220a884a607e044cb5d99fadbe9f3405a68c2170f4b42c5052d486e1027c02573ce64736f6c63430008250033",
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
