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

// SweeperMetaData contains all meta data concerning the Sweeper contract.
var SweeperMetaData = bind.MetaData{
	ABI: "[{\"inputs\":[{\"internalType\":\"address\",\"name\":\"gasTank_\",\"type\":\"address\"},{\"internalType\":\"address\",\"name\":\"bankroll_\",\"type\":\"address\"}],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[],\"name\":\"LengthMismatch\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"NotSelf\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"token\",\"type\":\"address\"}],\"name\":\"TransferFailed\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"Unauthorized\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"ZeroAddress\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":false,\"internalType\":\"uint256\",\"name\":\"amount\",\"type\":\"uint256\"}],\"name\":\"NativeSwept\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"address\",\"name\":\"account\",\"type\":\"address\"},{\"indexed\":false,\"internalType\":\"bool\",\"name\":\"delegated\",\"type\":\"bool\"},{\"indexed\":false,\"internalType\":\"bytes\",\"name\":\"reason\",\"type\":\"bytes\"}],\"name\":\"Skipped\",\"type\":\"event\"},{\"inputs\":[],\"name\":\"bankroll\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address[]\",\"name\":\"accounts\",\"type\":\"address[]\"},{\"internalType\":\"address[][]\",\"name\":\"tokens\",\"type\":\"address[][]\"}],\"name\":\"batch\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"swept\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"delegatedCodeHash\",\"outputs\":[{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"gasTank\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address[]\",\"name\":\"tokens\",\"type\":\"address[]\"}],\"name\":\"sweep\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"stateMutability\":\"payable\",\"type\":\"receive\"}]",
	ID:  "Sweeper",
	Bin: "0x610100604052348015610010575f5ffd5b50604051610c08380380610c0883398101604081905261002f916100ef565b6001600160a01b038216158061004c57506001600160a01b038116155b1561006a5760405163d92e233d60e01b815260040160405180910390fd5b6001600160a01b03808316608052811660a0523060c08190526040516100b1919060200161ef0160f01b815260609190911b6001600160601b031916600382015260170190565b60408051601f19818403018152919052805160209091012060e052506101209050565b80516001600160a01b03811681146100ea575f5ffd5b919050565b5f5f60408385031215610100575f5ffd5b610109836100d4565b9150610117602084016100d4565b90509250929050565b60805160a05160c05160e051610a8d61017b5f395f818160b8015261024601525f81816101af015261044001525f81816068015281816104d501526105c401525f818161013901528181610167015261040c0152610a8d5ff3fe60806040526004361061004c575f3560e01c80630c657eb014610057578063185da24e146100a75780631fe951d4146100e8578063780469bb146101075780637be52e5914610128575f5ffd5b3661005357005b5f5ffd5b348015610062575f5ffd5b5061008a7f000000000000000000000000000000000000000000000000000000000000000081565b6040516001600160a01b0390911681526020015b60405180910390f35b3480156100b2575f5ffd5b506100da7f000000000000000000000000000000000000000000000000000000000000000081565b60405190815260200161009e565b3480156100f3575f5ffd5b506100da61010236600461081f565b61015b565b348015610112575f5ffd5b5061012661012136600461088b565b610401565b005b348015610133575f5ffd5b5061008a7f000000000000000000000000000000000000000000000000000000000000000081565b5f336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146101a4576040516282b42960e81b815260040160405180910390fd5b306001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146101ed576040516314e1dbf760e11b815260040160405180910390fd5b838214610210576040516001621398b960e31b0319815260040160405180910390fd5b5f5b848110156103f8575f86868381811061022d5761022d6108ca565b905060200201602081019061024291906108f9565b90507f0000000000000000000000000000000000000000000000000000000000000000816001600160a01b03163f146102ce57806001600160a01b03167f14f629279ba984fe6722c06164473c13fbe65426c2d2218a59550111afe47d615f6040516102c091151581526040602082018190525f9082015260600190565b60405180910390a2506103f0565b5f806001600160a01b0383163063780469bb8989888181106102f2576102f26108ca565b90506020028101906103049190610919565b60405160240161031592919061095f565b60408051601f198184030181529181526020820180516001600160e01b031660e09490941b93909317909252905161034d92506109a9565b5f604051808303815f865af19150503d805f8114610386576040519150601f19603f3d011682016040523d82523d5f602084013e61038b565b606091505b5091509150816103e157826001600160a01b03167f14f629279ba984fe6722c06164473c13fbe65426c2d2218a59550111afe47d616001836040516103d19291906109bf565b60405180910390a25050506103f0565b6103ea856109fd565b94505050505b600101610212565b50949350505050565b336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016148015906104635750336001600160a01b037f00000000000000000000000000000000000000000000000000000000000000001614155b15610480576040516282b42960e81b815260040160405180910390fd5b5f5b818110156106e7575f83838381811061049d5761049d6108ca565b90506020020160208101906104b291906108f9565b90506001600160a01b0381166105a457475f8190036104d25750506106df565b5f7f00000000000000000000000000000000000000000000000000000000000000006001600160a01b0316826040515f6040518083038185875af1925050503d805f811461053b576040519150601f19603f3d011682016040523d82523d5f602084013e610540565b606091505b5050905080610569576040516339f1c8d960e01b81525f60048201526024015b60405180910390fd5b6040518281527f1ed033bc10f1dd641f4df398853976d2b76ee062cce863301929fe8ee8336faa9060200160405180910390a15050506106df565b5f6105ae826106ec565b9050805f036105be5750506106df565b604080517f00000000000000000000000000000000000000000000000000000000000000006001600160a01b039081166024830152604480830185905283518084039091018152606490920183526020820180516001600160e01b031663a9059cbb60e01b17905291515f9283929086169161063a91906109a9565b5f604051808303815f865af19150503d805f8114610673576040519150601f19603f3d011682016040523d82523d5f602084013e610678565b606091505b50915091508115806106b157508051158015906106b157506020815110806106b15750808060200190518101906106af9190610a21565b155b156106da576040516339f1c8d960e01b81526001600160a01b0385166004820152602401610560565b505050505b600101610482565b505050565b604080513060248083019190915282518083039091018152604490910182526020810180516001600160e01b03166370a0823160e01b17905290515f91829182916001600160a01b0386169161074291906109a9565b5f60405180830381855afa9150503d805f811461077a576040519150601f19603f3d011682016040523d82523d5f602084013e61077f565b606091505b5091509150811580610792575060208151105b156107bb576040516339f1c8d960e01b81526001600160a01b0385166004820152602401610560565b808060200190518101906107cf9190610a40565b949350505050565b5f5f83601f8401126107e7575f5ffd5b50813567ffffffffffffffff8111156107fe575f5ffd5b6020830191508360208260051b8501011115610818575f5ffd5b9250929050565b5f5f5f5f60408587031215610832575f5ffd5b843567ffffffffffffffff811115610848575f5ffd5b610854878288016107d7565b909550935050602085013567ffffffffffffffff811115610873575f5ffd5b61087f878288016107d7565b95989497509550505050565b5f5f6020838503121561089c575f5ffd5b823567ffffffffffffffff8111156108b2575f5ffd5b6108be858286016107d7565b90969095509350505050565b634e487b7160e01b5f52603260045260245ffd5b80356001600160a01b03811681146108f4575f5ffd5b919050565b5f60208284031215610909575f5ffd5b610912826108de565b9392505050565b5f5f8335601e1984360301811261092e575f5ffd5b83018035915067ffffffffffffffff821115610948575f5ffd5b6020019150600581901b3603821315610818575f5ffd5b602080825281018290525f8360408301825b8581101561099f576001600160a01b0361098a846108de565b16825260209283019290910190600101610971565b5095945050505050565b5f82518060208501845e5f920191825250919050565b8215158152604060208201525f82518060408401528060208501606085015e5f606082850101526060601f19601f8301168401019150509392505050565b5f60018201610a1a57634e487b7160e01b5f52601160045260245ffd5b5060010190565b5f60208284031215610a31575f5ffd5b81518015158114610912575f5ffd5b5f60208284031215610a50575f5ffd5b505191905056fea264697066735822122002c0269a5e4776b04e2481b231e2368e7e1202558a42dc90ab1f9f28c0433da864736f6c63430008250033",
}

// Sweeper is an auto generated Go binding around an Ethereum contract.
type Sweeper struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *Sweeper) GetABI() abi.ABI {
	return c.abi
}

// NewSweeper creates a new instance of Sweeper.
func NewSweeper() *Sweeper {
	parsed, err := SweeperMetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &Sweeper{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *Sweeper) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackConstructor is the Go binding used to pack the parameters required for
// contract deployment.
//
// Solidity: constructor(address gasTank_, address bankroll_) returns()
func (sweeper *Sweeper) PackConstructor(gasTank_ common.Address, bankroll_ common.Address) []byte {
	enc, err := sweeper.abi.Pack("", gasTank_, bankroll_)
	if err != nil {
		panic(err)
	}
	return enc
}

// PackBankroll is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x0c657eb0.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function bankroll() view returns(address)
func (sweeper *Sweeper) PackBankroll() []byte {
	enc, err := sweeper.abi.Pack("bankroll")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackBankroll is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x0c657eb0.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function bankroll() view returns(address)
func (sweeper *Sweeper) TryPackBankroll() ([]byte, error) {
	return sweeper.abi.Pack("bankroll")
}

// UnpackBankroll is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x0c657eb0.
//
// Solidity: function bankroll() view returns(address)
func (sweeper *Sweeper) UnpackBankroll(data []byte) (common.Address, error) {
	out, err := sweeper.abi.Unpack("bankroll", data)
	if err != nil {
		return *new(common.Address), err
	}
	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)
	return out0, nil
}

// PackBatch is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1fe951d4.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function batch(address[] accounts, address[][] tokens) returns(uint256 swept)
func (sweeper *Sweeper) PackBatch(accounts []common.Address, tokens [][]common.Address) []byte {
	enc, err := sweeper.abi.Pack("batch", accounts, tokens)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackBatch is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x1fe951d4.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function batch(address[] accounts, address[][] tokens) returns(uint256 swept)
func (sweeper *Sweeper) TryPackBatch(accounts []common.Address, tokens [][]common.Address) ([]byte, error) {
	return sweeper.abi.Pack("batch", accounts, tokens)
}

// UnpackBatch is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x1fe951d4.
//
// Solidity: function batch(address[] accounts, address[][] tokens) returns(uint256 swept)
func (sweeper *Sweeper) UnpackBatch(data []byte) (*big.Int, error) {
	out, err := sweeper.abi.Unpack("batch", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackDelegatedCodeHash is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x185da24e.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function delegatedCodeHash() view returns(bytes32)
func (sweeper *Sweeper) PackDelegatedCodeHash() []byte {
	enc, err := sweeper.abi.Pack("delegatedCodeHash")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackDelegatedCodeHash is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x185da24e.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function delegatedCodeHash() view returns(bytes32)
func (sweeper *Sweeper) TryPackDelegatedCodeHash() ([]byte, error) {
	return sweeper.abi.Pack("delegatedCodeHash")
}

// UnpackDelegatedCodeHash is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x185da24e.
//
// Solidity: function delegatedCodeHash() view returns(bytes32)
func (sweeper *Sweeper) UnpackDelegatedCodeHash(data []byte) ([32]byte, error) {
	out, err := sweeper.abi.Unpack("delegatedCodeHash", data)
	if err != nil {
		return *new([32]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	return out0, nil
}

// PackGasTank is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x7be52e59.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function gasTank() view returns(address)
func (sweeper *Sweeper) PackGasTank() []byte {
	enc, err := sweeper.abi.Pack("gasTank")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackGasTank is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x7be52e59.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function gasTank() view returns(address)
func (sweeper *Sweeper) TryPackGasTank() ([]byte, error) {
	return sweeper.abi.Pack("gasTank")
}

// UnpackGasTank is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x7be52e59.
//
// Solidity: function gasTank() view returns(address)
func (sweeper *Sweeper) UnpackGasTank(data []byte) (common.Address, error) {
	out, err := sweeper.abi.Unpack("gasTank", data)
	if err != nil {
		return *new(common.Address), err
	}
	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)
	return out0, nil
}

// PackSweep is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x780469bb.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function sweep(address[] tokens) returns()
func (sweeper *Sweeper) PackSweep(tokens []common.Address) []byte {
	enc, err := sweeper.abi.Pack("sweep", tokens)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSweep is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x780469bb.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function sweep(address[] tokens) returns()
func (sweeper *Sweeper) TryPackSweep(tokens []common.Address) ([]byte, error) {
	return sweeper.abi.Pack("sweep", tokens)
}

// SweeperNativeSwept represents a NativeSwept event raised by the Sweeper contract.
type SweeperNativeSwept struct {
	Amount *big.Int
	Raw    *types.Log // Blockchain specific contextual infos
}

const SweeperNativeSweptEventName = "NativeSwept"

// ContractEventName returns the user-defined event name.
func (SweeperNativeSwept) ContractEventName() string {
	return SweeperNativeSweptEventName
}

// UnpackNativeSweptEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event NativeSwept(uint256 amount)
func (sweeper *Sweeper) UnpackNativeSweptEvent(log *types.Log) (*SweeperNativeSwept, error) {
	event := "NativeSwept"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != sweeper.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(SweeperNativeSwept)
	if len(log.Data) > 0 {
		if err := sweeper.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range sweeper.abi.Events[event].Inputs {
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

// SweeperSkipped represents a Skipped event raised by the Sweeper contract.
type SweeperSkipped struct {
	Account   common.Address
	Delegated bool
	Reason    []byte
	Raw       *types.Log // Blockchain specific contextual infos
}

const SweeperSkippedEventName = "Skipped"

// ContractEventName returns the user-defined event name.
func (SweeperSkipped) ContractEventName() string {
	return SweeperSkippedEventName
}

// UnpackSkippedEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event Skipped(address indexed account, bool delegated, bytes reason)
func (sweeper *Sweeper) UnpackSkippedEvent(log *types.Log) (*SweeperSkipped, error) {
	event := "Skipped"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != sweeper.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(SweeperSkipped)
	if len(log.Data) > 0 {
		if err := sweeper.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range sweeper.abi.Events[event].Inputs {
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
func (sweeper *Sweeper) UnpackError(raw []byte) (any, error) {
	if bytes.Equal(raw[:4], sweeper.abi.Errors["LengthMismatch"].ID.Bytes()[:4]) {
		return sweeper.UnpackLengthMismatchError(raw[4:])
	}
	if bytes.Equal(raw[:4], sweeper.abi.Errors["NotSelf"].ID.Bytes()[:4]) {
		return sweeper.UnpackNotSelfError(raw[4:])
	}
	if bytes.Equal(raw[:4], sweeper.abi.Errors["TransferFailed"].ID.Bytes()[:4]) {
		return sweeper.UnpackTransferFailedError(raw[4:])
	}
	if bytes.Equal(raw[:4], sweeper.abi.Errors["Unauthorized"].ID.Bytes()[:4]) {
		return sweeper.UnpackUnauthorizedError(raw[4:])
	}
	if bytes.Equal(raw[:4], sweeper.abi.Errors["ZeroAddress"].ID.Bytes()[:4]) {
		return sweeper.UnpackZeroAddressError(raw[4:])
	}
	return nil, errors.New("Unknown error")
}

// SweeperLengthMismatch represents a LengthMismatch error raised by the Sweeper contract.
type SweeperLengthMismatch struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error LengthMismatch()
func SweeperLengthMismatchErrorID() common.Hash {
	return common.HexToHash("0xff633a3803c58b9bc21e58efecee59f27e033cc0b1883fccb4969c76146fe60f")
}

// UnpackLengthMismatchError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error LengthMismatch()
func (sweeper *Sweeper) UnpackLengthMismatchError(raw []byte) (*SweeperLengthMismatch, error) {
	out := new(SweeperLengthMismatch)
	if err := sweeper.abi.UnpackIntoInterface(out, "LengthMismatch", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// SweeperNotSelf represents a NotSelf error raised by the Sweeper contract.
type SweeperNotSelf struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NotSelf()
func SweeperNotSelfErrorID() common.Hash {
	return common.HexToHash("0x29c3b7ee14a7adaa7fba7b043229509fe963f719303620e91e88c61c6b12de34")
}

// UnpackNotSelfError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NotSelf()
func (sweeper *Sweeper) UnpackNotSelfError(raw []byte) (*SweeperNotSelf, error) {
	out := new(SweeperNotSelf)
	if err := sweeper.abi.UnpackIntoInterface(out, "NotSelf", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// SweeperTransferFailed represents a TransferFailed error raised by the Sweeper contract.
type SweeperTransferFailed struct {
	Token common.Address
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error TransferFailed(address token)
func SweeperTransferFailedErrorID() common.Hash {
	return common.HexToHash("0x39f1c8d9a08940175dbc82f15840b953aa855264e371e68f3e5d5cb38c445fa0")
}

// UnpackTransferFailedError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error TransferFailed(address token)
func (sweeper *Sweeper) UnpackTransferFailedError(raw []byte) (*SweeperTransferFailed, error) {
	out := new(SweeperTransferFailed)
	if err := sweeper.abi.UnpackIntoInterface(out, "TransferFailed", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// SweeperUnauthorized represents a Unauthorized error raised by the Sweeper contract.
type SweeperUnauthorized struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error Unauthorized()
func SweeperUnauthorizedErrorID() common.Hash {
	return common.HexToHash("0x82b4290015f7ec7256ca2a6247d3c2a89c4865c0e791456df195f40ad0a81367")
}

// UnpackUnauthorizedError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error Unauthorized()
func (sweeper *Sweeper) UnpackUnauthorizedError(raw []byte) (*SweeperUnauthorized, error) {
	out := new(SweeperUnauthorized)
	if err := sweeper.abi.UnpackIntoInterface(out, "Unauthorized", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// SweeperZeroAddress represents a ZeroAddress error raised by the Sweeper contract.
type SweeperZeroAddress struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error ZeroAddress()
func SweeperZeroAddressErrorID() common.Hash {
	return common.HexToHash("0xd92e233df2717d4a40030e20904abd27b68fcbeede117eaaccbbdac9618c8c73")
}

// UnpackZeroAddressError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error ZeroAddress()
func (sweeper *Sweeper) UnpackZeroAddressError(raw []byte) (*SweeperZeroAddress, error) {
	out := new(SweeperZeroAddress)
	if err := sweeper.abi.UnpackIntoInterface(out, "ZeroAddress", raw); err != nil {
		return nil, err
	}
	return out, nil
}
