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

// TestTokenMetaData contains all meta data concerning the TestToken contract.
var TestTokenMetaData = bind.MetaData{
	ABI: "[{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name_\",\"type\":\"string\"},{\"internalType\":\"string\",\"name\":\"symbol_\",\"type\":\"string\"},{\"internalType\":\"uint8\",\"name\":\"decimals_\",\"type\":\"uint8\"}],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"spender\",\"type\":\"address\"},{\"internalType\":\"uint256\",\"name\":\"allowance\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"needed\",\"type\":\"uint256\"}],\"name\":\"InsufficientAllowance\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"account\",\"type\":\"address\"},{\"internalType\":\"uint256\",\"name\":\"balance\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"needed\",\"type\":\"uint256\"}],\"name\":\"InsufficientBalance\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"NotOwner\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"ZeroAddress\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"address\",\"name\":\"owner\",\"type\":\"address\"},{\"indexed\":true,\"internalType\":\"address\",\"name\":\"spender\",\"type\":\"address\"},{\"indexed\":false,\"internalType\":\"uint256\",\"name\":\"value\",\"type\":\"uint256\"}],\"name\":\"Approval\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"address\",\"name\":\"from\",\"type\":\"address\"},{\"indexed\":true,\"internalType\":\"address\",\"name\":\"to\",\"type\":\"address\"},{\"indexed\":false,\"internalType\":\"uint256\",\"name\":\"value\",\"type\":\"uint256\"}],\"name\":\"Transfer\",\"type\":\"event\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"},{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"name\":\"allowance\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"spender\",\"type\":\"address\"},{\"internalType\":\"uint256\",\"name\":\"value\",\"type\":\"uint256\"}],\"name\":\"approve\",\"outputs\":[{\"internalType\":\"bool\",\"name\":\"\",\"type\":\"bool\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"name\":\"balanceOf\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"decimals\",\"outputs\":[{\"internalType\":\"uint8\",\"name\":\"\",\"type\":\"uint8\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"to\",\"type\":\"address\"},{\"internalType\":\"uint256\",\"name\":\"amount\",\"type\":\"uint256\"}],\"name\":\"mint\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"name\",\"outputs\":[{\"internalType\":\"string\",\"name\":\"\",\"type\":\"string\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"owner\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"symbol\",\"outputs\":[{\"internalType\":\"string\",\"name\":\"\",\"type\":\"string\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"totalSupply\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"to\",\"type\":\"address\"},{\"internalType\":\"uint256\",\"name\":\"value\",\"type\":\"uint256\"}],\"name\":\"transfer\",\"outputs\":[{\"internalType\":\"bool\",\"name\":\"\",\"type\":\"bool\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"from\",\"type\":\"address\"},{\"internalType\":\"address\",\"name\":\"to\",\"type\":\"address\"},{\"internalType\":\"uint256\",\"name\":\"value\",\"type\":\"uint256\"}],\"name\":\"transferFrom\",\"outputs\":[{\"internalType\":\"bool\",\"name\":\"\",\"type\":\"bool\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"}]",
	ID:  "TestToken",
	Bin: "0x60c060405234801561000f575f5ffd5b50604051610a14380380610a1483398101604081905261002e916100f5565b5f6100398482610201565b5060016100468382610201565b5060ff1660805250503360a0526102bf565b634e487b7160e01b5f52604160045260245ffd5b5f82601f83011261007b575f5ffd5b81516001600160401b0381111561009457610094610058565b604051601f8201601f19908116603f011681016001600160401b03811182821017156100c2576100c2610058565b6040528181528382016020018510156100d9575f5ffd5b8160208501602083015e5f918101602001919091529392505050565b5f5f5f60608486031215610107575f5ffd5b83516001600160401b0381111561011c575f5ffd5b6101288682870161006c565b602086015190945090506001600160401b03811115610145575f5ffd5b6101518682870161006c565b925050604084015160ff81168114610167575f5ffd5b809150509250925092565b600181811c9082168061018657607f821691505b6020821081036101a457634e487b7160e01b5f52602260045260245ffd5b50919050565b601f8211156101fc57828211156101fc57805f5260205f20601f840160051c60208510156101d557505f5b90810190601f840160051c035f5b818110156101f8575f838201556001016101e3565b5050505b505050565b81516001600160401b0381111561021a5761021a610058565b61022e816102288454610172565b846101aa565b6020601f821160018114610260575f83156102495750848201515b5f19600385901b1c1916600184901b1784556102b8565b5f84815260208120601f198516915b8281101561028f578785015182556020948501946001909201910161026f565b50848210156102ac57868401515f19600387901b60f8161c191681555b505060018360011b0184555b5050505050565b60805160a05161072d6102e75f395f818161018701526103c701525f61011a015261072d5ff3fe608060405234801561000f575f5ffd5b50600436106100a6575f3560e01c806340c10f191161006e57806340c10f191461014e57806370a08231146101635780638da5cb5b1461018257806395d89b41146101c1578063a9059cbb146101c9578063dd62ed3e146101dc575f5ffd5b806306fdde03146100aa578063095ea7b3146100c857806318160ddd146100eb57806323b872dd14610102578063313ce56714610115575b5f5ffd5b6100b2610206565b6040516100bf919061059d565b60405180910390f35b6100db6100d63660046105ed565b610291565b60405190151581526020016100bf565b6100f460025481565b6040519081526020016100bf565b6100db610110366004610615565b61031d565b61013c7f000000000000000000000000000000000000000000000000000000000000000081565b60405160ff90911681526020016100bf565b61016161015c3660046105ed565b6103bc565b005b6100f461017136600461064f565b60036020525f908152604090205481565b6101a97f000000000000000000000000000000000000000000000000000000000000000081565b6040516001600160a01b0390911681526020016100bf565b6100b2610495565b6100db6101d73660046105ed565b6104a2565b6100f46101ea36600461066f565b600460209081525f928352604080842090915290825290205481565b5f8054610212906106a0565b80601f016020809104026020016040519081016040528092919081815260200182805461023e906106a0565b80156102895780601f1061026057610100808354040283529160200191610289565b820191905f5260205f20905b81548152906001019060200180831161026c57829003601f168201915b505050505081565b5f6001600160a01b0383166102b95760405163d92e233d60e01b815260040160405180910390fd5b335f8181526004602090815260408083206001600160a01b03881680855290835292819020869055518581529192917f8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925910160405180910390a35060015b92915050565b6001600160a01b0383165f9081526004602090815260408083203384529091528120545f1981146103a6578281101561037e57604051630c95cf2760e11b815233600482015260248101829052604481018490526064015b60405180910390fd5b6001600160a01b0385165f908152600460209081526040808320338452909152902083820390555b6103b18585856104b7565b506001949350505050565b336001600160a01b037f00000000000000000000000000000000000000000000000000000000000000001614610405576040516330cd747160e01b815260040160405180910390fd5b6001600160a01b03821661042c5760405163d92e233d60e01b815260040160405180910390fd5b8060025f82825461043d91906106d8565b90915550506001600160a01b0382165f818152600360209081526040808320805486019055518481527fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef910160405180910390a35050565b60018054610212906106a0565b5f6104ae3384846104b7565b50600192915050565b6001600160a01b0382166104de5760405163d92e233d60e01b815260040160405180910390fd5b6001600160a01b0383165f90815260036020526040902054818110156105305760405163db42144d60e01b81526001600160a01b03851660048201526024810182905260448101839052606401610375565b6001600160a01b038085165f8181526003602052604080822086860390559286168082529083902080548601905591517fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef9061058f9086815260200190565b60405180910390a350505050565b602081525f82518060208401528060208501604085015e5f604082850101526040601f19601f83011684010191505092915050565b80356001600160a01b03811681146105e8575f5ffd5b919050565b5f5f604083850312156105fe575f5ffd5b610607836105d2565b946020939093013593505050565b5f5f5f60608486031215610627575f5ffd5b610630846105d2565b925061063e602085016105d2565b929592945050506040919091013590565b5f6020828403121561065f575f5ffd5b610668826105d2565b9392505050565b5f5f60408385031215610680575f5ffd5b610689836105d2565b9150610697602084016105d2565b90509250929050565b600181811c908216806106b457607f821691505b6020821081036106d257634e487b7160e01b5f52602260045260245ffd5b50919050565b8082018082111561031757634e487b7160e01b5f52601160045260245ffdfea26469706673582212208e32cf7d88b12d76425204da837d1515a7c9324a22251f7bcc0be2a78ad7b2a364736f6c63430008250033",
}

// TestToken is an auto generated Go binding around an Ethereum contract.
type TestToken struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *TestToken) GetABI() abi.ABI {
	return c.abi
}

// NewTestToken creates a new instance of TestToken.
func NewTestToken() *TestToken {
	parsed, err := TestTokenMetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &TestToken{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *TestToken) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackConstructor is the Go binding used to pack the parameters required for
// contract deployment.
//
// Solidity: constructor(string name_, string symbol_, uint8 decimals_) returns()
func (testToken *TestToken) PackConstructor(name_ string, symbol_ string, decimals_ uint8) []byte {
	enc, err := testToken.abi.Pack("", name_, symbol_, decimals_)
	if err != nil {
		panic(err)
	}
	return enc
}

// PackAllowance is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xdd62ed3e.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function allowance(address , address ) view returns(uint256)
func (testToken *TestToken) PackAllowance(arg0 common.Address, arg1 common.Address) []byte {
	enc, err := testToken.abi.Pack("allowance", arg0, arg1)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackAllowance is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xdd62ed3e.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function allowance(address , address ) view returns(uint256)
func (testToken *TestToken) TryPackAllowance(arg0 common.Address, arg1 common.Address) ([]byte, error) {
	return testToken.abi.Pack("allowance", arg0, arg1)
}

// UnpackAllowance is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xdd62ed3e.
//
// Solidity: function allowance(address , address ) view returns(uint256)
func (testToken *TestToken) UnpackAllowance(data []byte) (*big.Int, error) {
	out, err := testToken.abi.Unpack("allowance", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackApprove is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x095ea7b3.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function approve(address spender, uint256 value) returns(bool)
func (testToken *TestToken) PackApprove(spender common.Address, value *big.Int) []byte {
	enc, err := testToken.abi.Pack("approve", spender, value)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackApprove is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x095ea7b3.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function approve(address spender, uint256 value) returns(bool)
func (testToken *TestToken) TryPackApprove(spender common.Address, value *big.Int) ([]byte, error) {
	return testToken.abi.Pack("approve", spender, value)
}

// UnpackApprove is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x095ea7b3.
//
// Solidity: function approve(address spender, uint256 value) returns(bool)
func (testToken *TestToken) UnpackApprove(data []byte) (bool, error) {
	out, err := testToken.abi.Unpack("approve", data)
	if err != nil {
		return *new(bool), err
	}
	out0 := *abi.ConvertType(out[0], new(bool)).(*bool)
	return out0, nil
}

// PackBalanceOf is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x70a08231.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function balanceOf(address ) view returns(uint256)
func (testToken *TestToken) PackBalanceOf(arg0 common.Address) []byte {
	enc, err := testToken.abi.Pack("balanceOf", arg0)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackBalanceOf is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x70a08231.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function balanceOf(address ) view returns(uint256)
func (testToken *TestToken) TryPackBalanceOf(arg0 common.Address) ([]byte, error) {
	return testToken.abi.Pack("balanceOf", arg0)
}

// UnpackBalanceOf is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x70a08231.
//
// Solidity: function balanceOf(address ) view returns(uint256)
func (testToken *TestToken) UnpackBalanceOf(data []byte) (*big.Int, error) {
	out, err := testToken.abi.Unpack("balanceOf", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackDecimals is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x313ce567.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function decimals() view returns(uint8)
func (testToken *TestToken) PackDecimals() []byte {
	enc, err := testToken.abi.Pack("decimals")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackDecimals is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x313ce567.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function decimals() view returns(uint8)
func (testToken *TestToken) TryPackDecimals() ([]byte, error) {
	return testToken.abi.Pack("decimals")
}

// UnpackDecimals is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x313ce567.
//
// Solidity: function decimals() view returns(uint8)
func (testToken *TestToken) UnpackDecimals(data []byte) (uint8, error) {
	out, err := testToken.abi.Unpack("decimals", data)
	if err != nil {
		return *new(uint8), err
	}
	out0 := *abi.ConvertType(out[0], new(uint8)).(*uint8)
	return out0, nil
}

// PackMint is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x40c10f19.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function mint(address to, uint256 amount) returns()
func (testToken *TestToken) PackMint(to common.Address, amount *big.Int) []byte {
	enc, err := testToken.abi.Pack("mint", to, amount)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMint is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x40c10f19.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function mint(address to, uint256 amount) returns()
func (testToken *TestToken) TryPackMint(to common.Address, amount *big.Int) ([]byte, error) {
	return testToken.abi.Pack("mint", to, amount)
}

// PackName is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x06fdde03.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function name() view returns(string)
func (testToken *TestToken) PackName() []byte {
	enc, err := testToken.abi.Pack("name")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackName is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x06fdde03.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function name() view returns(string)
func (testToken *TestToken) TryPackName() ([]byte, error) {
	return testToken.abi.Pack("name")
}

// UnpackName is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x06fdde03.
//
// Solidity: function name() view returns(string)
func (testToken *TestToken) UnpackName(data []byte) (string, error) {
	out, err := testToken.abi.Unpack("name", data)
	if err != nil {
		return *new(string), err
	}
	out0 := *abi.ConvertType(out[0], new(string)).(*string)
	return out0, nil
}

// PackOwner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8da5cb5b.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function owner() view returns(address)
func (testToken *TestToken) PackOwner() []byte {
	enc, err := testToken.abi.Pack("owner")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackOwner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8da5cb5b.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function owner() view returns(address)
func (testToken *TestToken) TryPackOwner() ([]byte, error) {
	return testToken.abi.Pack("owner")
}

// UnpackOwner is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x8da5cb5b.
//
// Solidity: function owner() view returns(address)
func (testToken *TestToken) UnpackOwner(data []byte) (common.Address, error) {
	out, err := testToken.abi.Unpack("owner", data)
	if err != nil {
		return *new(common.Address), err
	}
	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)
	return out0, nil
}

// PackSymbol is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x95d89b41.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function symbol() view returns(string)
func (testToken *TestToken) PackSymbol() []byte {
	enc, err := testToken.abi.Pack("symbol")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSymbol is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x95d89b41.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function symbol() view returns(string)
func (testToken *TestToken) TryPackSymbol() ([]byte, error) {
	return testToken.abi.Pack("symbol")
}

// UnpackSymbol is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x95d89b41.
//
// Solidity: function symbol() view returns(string)
func (testToken *TestToken) UnpackSymbol(data []byte) (string, error) {
	out, err := testToken.abi.Unpack("symbol", data)
	if err != nil {
		return *new(string), err
	}
	out0 := *abi.ConvertType(out[0], new(string)).(*string)
	return out0, nil
}

// PackTotalSupply is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x18160ddd.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function totalSupply() view returns(uint256)
func (testToken *TestToken) PackTotalSupply() []byte {
	enc, err := testToken.abi.Pack("totalSupply")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackTotalSupply is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x18160ddd.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function totalSupply() view returns(uint256)
func (testToken *TestToken) TryPackTotalSupply() ([]byte, error) {
	return testToken.abi.Pack("totalSupply")
}

// UnpackTotalSupply is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x18160ddd.
//
// Solidity: function totalSupply() view returns(uint256)
func (testToken *TestToken) UnpackTotalSupply(data []byte) (*big.Int, error) {
	out, err := testToken.abi.Unpack("totalSupply", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackTransfer is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa9059cbb.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function transfer(address to, uint256 value) returns(bool)
func (testToken *TestToken) PackTransfer(to common.Address, value *big.Int) []byte {
	enc, err := testToken.abi.Pack("transfer", to, value)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackTransfer is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa9059cbb.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function transfer(address to, uint256 value) returns(bool)
func (testToken *TestToken) TryPackTransfer(to common.Address, value *big.Int) ([]byte, error) {
	return testToken.abi.Pack("transfer", to, value)
}

// UnpackTransfer is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xa9059cbb.
//
// Solidity: function transfer(address to, uint256 value) returns(bool)
func (testToken *TestToken) UnpackTransfer(data []byte) (bool, error) {
	out, err := testToken.abi.Unpack("transfer", data)
	if err != nil {
		return *new(bool), err
	}
	out0 := *abi.ConvertType(out[0], new(bool)).(*bool)
	return out0, nil
}

// PackTransferFrom is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x23b872dd.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function transferFrom(address from, address to, uint256 value) returns(bool)
func (testToken *TestToken) PackTransferFrom(from common.Address, to common.Address, value *big.Int) []byte {
	enc, err := testToken.abi.Pack("transferFrom", from, to, value)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackTransferFrom is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x23b872dd.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function transferFrom(address from, address to, uint256 value) returns(bool)
func (testToken *TestToken) TryPackTransferFrom(from common.Address, to common.Address, value *big.Int) ([]byte, error) {
	return testToken.abi.Pack("transferFrom", from, to, value)
}

// UnpackTransferFrom is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x23b872dd.
//
// Solidity: function transferFrom(address from, address to, uint256 value) returns(bool)
func (testToken *TestToken) UnpackTransferFrom(data []byte) (bool, error) {
	out, err := testToken.abi.Unpack("transferFrom", data)
	if err != nil {
		return *new(bool), err
	}
	out0 := *abi.ConvertType(out[0], new(bool)).(*bool)
	return out0, nil
}

// TestTokenApproval represents a Approval event raised by the TestToken contract.
type TestTokenApproval struct {
	Owner   common.Address
	Spender common.Address
	Value   *big.Int
	Raw     *types.Log // Blockchain specific contextual infos
}

const TestTokenApprovalEventName = "Approval"

// ContractEventName returns the user-defined event name.
func (TestTokenApproval) ContractEventName() string {
	return TestTokenApprovalEventName
}

// UnpackApprovalEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event Approval(address indexed owner, address indexed spender, uint256 value)
func (testToken *TestToken) UnpackApprovalEvent(log *types.Log) (*TestTokenApproval, error) {
	event := "Approval"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != testToken.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(TestTokenApproval)
	if len(log.Data) > 0 {
		if err := testToken.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range testToken.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// TestTokenTransfer represents a Transfer event raised by the TestToken contract.
type TestTokenTransfer struct {
	From  common.Address
	To    common.Address
	Value *big.Int
	Raw   *types.Log // Blockchain specific contextual infos
}

const TestTokenTransferEventName = "Transfer"

// ContractEventName returns the user-defined event name.
func (TestTokenTransfer) ContractEventName() string {
	return TestTokenTransferEventName
}

// UnpackTransferEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event Transfer(address indexed from, address indexed to, uint256 value)
func (testToken *TestToken) UnpackTransferEvent(log *types.Log) (*TestTokenTransfer, error) {
	event := "Transfer"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != testToken.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(TestTokenTransfer)
	if len(log.Data) > 0 {
		if err := testToken.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range testToken.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// UnpackError attempts to decode the provided error data using user-defined
// error definitions.
func (testToken *TestToken) UnpackError(raw []byte) (any, error) {
	if bytes.Equal(raw[:4], testToken.abi.Errors["InsufficientAllowance"].ID.Bytes()[:4]) {
		return testToken.UnpackInsufficientAllowanceError(raw[4:])
	}
	if bytes.Equal(raw[:4], testToken.abi.Errors["InsufficientBalance"].ID.Bytes()[:4]) {
		return testToken.UnpackInsufficientBalanceError(raw[4:])
	}
	if bytes.Equal(raw[:4], testToken.abi.Errors["NotOwner"].ID.Bytes()[:4]) {
		return testToken.UnpackNotOwnerError(raw[4:])
	}
	if bytes.Equal(raw[:4], testToken.abi.Errors["ZeroAddress"].ID.Bytes()[:4]) {
		return testToken.UnpackZeroAddressError(raw[4:])
	}
	return nil, errors.New("Unknown error")
}

// TestTokenInsufficientAllowance represents a InsufficientAllowance error raised by the TestToken contract.
type TestTokenInsufficientAllowance struct {
	Spender   common.Address
	Allowance *big.Int
	Needed    *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error InsufficientAllowance(address spender, uint256 allowance, uint256 needed)
func TestTokenInsufficientAllowanceErrorID() common.Hash {
	return common.HexToHash("0x192b9e4ebc4a4fb7dd02b679453572cd28ba5c859d02dc04b21a8c00bc0a41f0")
}

// UnpackInsufficientAllowanceError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error InsufficientAllowance(address spender, uint256 allowance, uint256 needed)
func (testToken *TestToken) UnpackInsufficientAllowanceError(raw []byte) (*TestTokenInsufficientAllowance, error) {
	out := new(TestTokenInsufficientAllowance)
	if err := testToken.abi.UnpackIntoInterface(out, "InsufficientAllowance", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// TestTokenInsufficientBalance represents a InsufficientBalance error raised by the TestToken contract.
type TestTokenInsufficientBalance struct {
	Account common.Address
	Balance *big.Int
	Needed  *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error InsufficientBalance(address account, uint256 balance, uint256 needed)
func TestTokenInsufficientBalanceErrorID() common.Hash {
	return common.HexToHash("0xdb42144d928cd19733b9dfeead8bc02ed403845c274e06a6eee0944fb25ca5c4")
}

// UnpackInsufficientBalanceError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error InsufficientBalance(address account, uint256 balance, uint256 needed)
func (testToken *TestToken) UnpackInsufficientBalanceError(raw []byte) (*TestTokenInsufficientBalance, error) {
	out := new(TestTokenInsufficientBalance)
	if err := testToken.abi.UnpackIntoInterface(out, "InsufficientBalance", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// TestTokenNotOwner represents a NotOwner error raised by the TestToken contract.
type TestTokenNotOwner struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NotOwner()
func TestTokenNotOwnerErrorID() common.Hash {
	return common.HexToHash("0x30cd74712f59d478562d48e2d35de830db72c60a63dd08ae59199eec990b5bc4")
}

// UnpackNotOwnerError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NotOwner()
func (testToken *TestToken) UnpackNotOwnerError(raw []byte) (*TestTokenNotOwner, error) {
	out := new(TestTokenNotOwner)
	if err := testToken.abi.UnpackIntoInterface(out, "NotOwner", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// TestTokenZeroAddress represents a ZeroAddress error raised by the TestToken contract.
type TestTokenZeroAddress struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error ZeroAddress()
func TestTokenZeroAddressErrorID() common.Hash {
	return common.HexToHash("0xd92e233df2717d4a40030e20904abd27b68fcbeede117eaaccbbdac9618c8c73")
}

// UnpackZeroAddressError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error ZeroAddress()
func (testToken *TestToken) UnpackZeroAddressError(raw []byte) (*TestTokenZeroAddress, error) {
	out := new(TestTokenZeroAddress)
	if err := testToken.abi.UnpackIntoInterface(out, "ZeroAddress", raw); err != nil {
		return nil, err
	}
	return out, nil
}
