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
	ABI: "[{\"inputs\":[{\"internalType\":\"address\",\"name\":\"gasTank_\",\"type\":\"address\"},{\"internalType\":\"address\",\"name\":\"bankroll_\",\"type\":\"address\"},{\"internalType\":\"address\",\"name\":\"feeAddress_\",\"type\":\"address\"}],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[],\"name\":\"FeeAboveAmount\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"FeeWithoutAddress\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"LengthMismatch\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"NotSelf\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"token\",\"type\":\"address\"}],\"name\":\"TransferFailed\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"Unauthorized\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"ZeroAddress\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":false,\"internalType\":\"uint256\",\"name\":\"amount\",\"type\":\"uint256\"},{\"indexed\":false,\"internalType\":\"uint256\",\"name\":\"fee\",\"type\":\"uint256\"}],\"name\":\"NativeSwept\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"address\",\"name\":\"account\",\"type\":\"address\"},{\"indexed\":false,\"internalType\":\"bool\",\"name\":\"delegated\",\"type\":\"bool\"},{\"indexed\":false,\"internalType\":\"bytes\",\"name\":\"reason\",\"type\":\"bytes\"}],\"name\":\"Skipped\",\"type\":\"event\"},{\"inputs\":[],\"name\":\"bankroll\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address[]\",\"name\":\"accounts\",\"type\":\"address[]\"},{\"internalType\":\"address[][]\",\"name\":\"tokens\",\"type\":\"address[][]\"},{\"internalType\":\"uint256[][]\",\"name\":\"amounts\",\"type\":\"uint256[][]\"},{\"internalType\":\"uint256[][]\",\"name\":\"fees\",\"type\":\"uint256[][]\"}],\"name\":\"batch\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"swept\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"delegatedCodeHash\",\"outputs\":[{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"feeAddress\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"gasTank\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address[]\",\"name\":\"tokens\",\"type\":\"address[]\"},{\"internalType\":\"uint256[]\",\"name\":\"amounts\",\"type\":\"uint256[]\"},{\"internalType\":\"uint256[]\",\"name\":\"fees\",\"type\":\"uint256[]\"}],\"name\":\"sweep\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"stateMutability\":\"payable\",\"type\":\"receive\"}]",
	ID:  "Sweeper",
	Bin: "0x610120604052348015610010575f5ffd5b50604051610fcb380380610fcb83398101604081905261002f916100f7565b6001600160a01b038316158061004c57506001600160a01b038216155b1561006a5760405163d92e233d60e01b815260040160405180910390fd5b6001600160a01b0380841660805282811660a052811660c0523060e08190526040516100b7919060200161ef0160f01b815260609190911b6001600160601b031916600382015260170190565b60408051601f1981840301815291905280516020909101206101005250610137915050565b80516001600160a01b03811681146100f2575f5ffd5b919050565b5f5f5f60608486031215610109575f5ffd5b610112846100dc565b9250610120602085016100dc565b915061012e604085016100dc565b90509250925092565b60805160a05160c05160e05161010051610e1a6101b15f395f818160c3015261059901525f81816101d801526104ea01525f818161010401528181610325015281816103b3015261045c01525f8181607301528181610380015261042801525f8181610137015281816101a401526104a20152610e1a5ff3fe608060405260043610610057575f3560e01c80630c657eb014610062578063185da24e146100b257806341275358146100f35780637be52e5914610126578063be83d10a14610159578063eafd7ebf1461017a575f5ffd5b3661005e57005b5f5ffd5b34801561006d575f5ffd5b506100957f000000000000000000000000000000000000000000000000000000000000000081565b6040516001600160a01b0390911681526020015b60405180910390f35b3480156100bd575f5ffd5b506100e57f000000000000000000000000000000000000000000000000000000000000000081565b6040519081526020016100a9565b3480156100fe575f5ffd5b506100957f000000000000000000000000000000000000000000000000000000000000000081565b348015610131575f5ffd5b506100957f000000000000000000000000000000000000000000000000000000000000000081565b348015610164575f5ffd5b50610178610173366004610a6c565b610199565b005b348015610185575f5ffd5b506100e5610194366004610b0b565b610496565b336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016148015906101fb5750336001600160a01b037f00000000000000000000000000000000000000000000000000000000000000001614155b15610218576040516282b42960e81b815260040160405180910390fd5b84831415806102275750848114155b15610248576040516001621398b960e31b0319815260040160405180910390fd5b5f5b8581101561048d575f87878381811061026557610265610bd9565b905060200201602081019061027a9190610c08565b90505f86868481811061028f5761028f610bd9565b9050602002013590505f8585858181106102ab576102ab610bd9565b60200291909101359150506001600160a01b0383166102d5575f1982036102d0574791505b6102e9565b5f1982036102e9576102e6836107a4565b91505b815f036102f857505050610485565b818111156103195760405163331b61f360e21b815260040160405180910390fd5b5f8111801561034f57507f00000000000000000000000000000000000000000000000000000000000000006001600160a01b0316155b1561036d57604051631a60448f60e31b815260040160405180910390fd5b6001600160a01b038316610422576103ae7f00000000000000000000000000000000000000000000000000000000000000006103a98385610c3c565b610894565b6103d87f000000000000000000000000000000000000000000000000000000000000000082610894565b7feb918ccf07a76ac2379575284946d93ef47cfe55c32c1d5d50783f72bfaff9bc6104038284610c3c565b60408051918252602082018490520160405180910390a1505050610485565b610456837f00000000000000000000000000000000000000000000000000000000000000006104518486610c3c565b610916565b610481837f000000000000000000000000000000000000000000000000000000000000000083610916565b5050505b60010161024a565b50505050505050565b5f336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146104df576040516282b42960e81b815260040160405180910390fd5b306001600160a01b037f00000000000000000000000000000000000000000000000000000000000000001614610528576040516314e1dbf760e11b815260040160405180910390fd5b87861415806105375750878414155b806105425750878214155b15610563576040516001621398b960e31b0319815260040160405180910390fd5b5f5b88811015610797575f8a8a8381811061058057610580610bd9565b90506020020160208101906105959190610c08565b90507f0000000000000000000000000000000000000000000000000000000000000000816001600160a01b03163f1461062157806001600160a01b03167f14f629279ba984fe6722c06164473c13fbe65426c2d2218a59550111afe47d615f60405161061391151581526040602082018190525f9082015260600190565b60405180910390a25061078f565b5f806001600160a01b0383163063be83d10a8d8d8881811061064557610645610bd9565b90506020028101906106579190610c55565b8d8d8a81811061066957610669610bd9565b905060200281019061067b9190610c55565b8d8d8c81811061068d5761068d610bd9565b905060200281019061069f9190610c55565b6040516024016106b496959493929190610ccb565b60408051601f198184030181529181526020820180516001600160e01b031660e09490941b9390931790925290516106ec9250610d42565b5f604051808303815f865af19150503d805f8114610725576040519150601f19603f3d011682016040523d82523d5f602084013e61072a565b606091505b50915091508161078057826001600160a01b03167f14f629279ba984fe6722c06164473c13fbe65426c2d2218a59550111afe47d61600183604051610770929190610d58565b60405180910390a250505061078f565b61078985610d96565b94505050505b600101610565565b5098975050505050505050565b604080513060248083019190915282518083039091018152604490910182526020810180516001600160e01b03166370a0823160e01b17905290515f91829182916001600160a01b038616916107fa9190610d42565b5f60405180830381855afa9150503d805f8114610832576040519150601f19603f3d011682016040523d82523d5f602084013e610837565b606091505b509150915081158061084a575060208151105b15610878576040516339f1c8d960e01b81526001600160a01b03851660048201526024015b60405180910390fd5b8080602001905181019061088c9190610dae565b949350505050565b805f0361089f575050565b5f826001600160a01b0316826040515f6040518083038185875af1925050503d805f81146108e8576040519150601f19603f3d011682016040523d82523d5f602084013e6108ed565b606091505b5050905080610911576040516339f1c8d960e01b81525f600482015260240161086f565b505050565b805f0361092257505050565b604080516001600160a01b038481166024830152604480830185905283518084039091018152606490920183526020820180516001600160e01b031663a9059cbb60e01b17905291515f9283929087169161097d9190610d42565b5f604051808303815f865af19150503d805f81146109b6576040519150601f19603f3d011682016040523d82523d5f602084013e6109bb565b606091505b50915091508115806109f457508051158015906109f457506020815110806109f45750808060200190518101906109f29190610dc5565b155b15610a1d576040516339f1c8d960e01b81526001600160a01b038616600482015260240161086f565b5050505050565b5f5f83601f840112610a34575f5ffd5b50813567ffffffffffffffff811115610a4b575f5ffd5b6020830191508360208260051b8501011115610a65575f5ffd5b9250929050565b5f5f5f5f5f5f60608789031215610a81575f5ffd5b863567ffffffffffffffff811115610a97575f5ffd5b610aa389828a01610a24565b909750955050602087013567ffffffffffffffff811115610ac2575f5ffd5b610ace89828a01610a24565b909550935050604087013567ffffffffffffffff811115610aed575f5ffd5b610af989828a01610a24565b979a9699509497509295939492505050565b5f5f5f5f5f5f5f5f6080898b031215610b22575f5ffd5b883567ffffffffffffffff811115610b38575f5ffd5b610b448b828c01610a24565b909950975050602089013567ffffffffffffffff811115610b63575f5ffd5b610b6f8b828c01610a24565b909750955050604089013567ffffffffffffffff811115610b8e575f5ffd5b610b9a8b828c01610a24565b909550935050606089013567ffffffffffffffff811115610bb9575f5ffd5b610bc58b828c01610a24565b999c989b5096995094979396929594505050565b634e487b7160e01b5f52603260045260245ffd5b80356001600160a01b0381168114610c03575f5ffd5b919050565b5f60208284031215610c18575f5ffd5b610c2182610bed565b9392505050565b634e487b7160e01b5f52601160045260245ffd5b81810381811115610c4f57610c4f610c28565b92915050565b5f5f8335601e19843603018112610c6a575f5ffd5b83018035915067ffffffffffffffff821115610c84575f5ffd5b6020019150600581901b3603821315610a65575f5ffd5b8183525f6001600160fb1b03831115610cb2575f5ffd5b8260051b80836020870137939093016020019392505050565b606080825281018690525f8760808301825b89811015610d0b576001600160a01b03610cf684610bed565b16825260209283019290910190600101610cdd565b508381036020850152610d1f81888a610c9b565b9150508281036040840152610d35818587610c9b565b9998505050505050505050565b5f82518060208501845e5f920191825250919050565b8215158152604060208201525f82518060408401528060208501606085015e5f606082850101526060601f19601f8301168401019150509392505050565b5f60018201610da757610da7610c28565b5060010190565b5f60208284031215610dbe575f5ffd5b5051919050565b5f60208284031215610dd5575f5ffd5b81518015158114610c21575f5ffdfea26469706673582212209c44ce2ba2ed6767767ce36e2e5c7e952b85c62de6f718e7d64fcdbe412e897364736f6c63430008250033",
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
// Solidity: constructor(address gasTank_, address bankroll_, address feeAddress_) returns()
func (sweeper *Sweeper) PackConstructor(gasTank_ common.Address, bankroll_ common.Address, feeAddress_ common.Address) []byte {
	enc, err := sweeper.abi.Pack("", gasTank_, bankroll_, feeAddress_)
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
// the contract method with ID 0xeafd7ebf.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function batch(address[] accounts, address[][] tokens, uint256[][] amounts, uint256[][] fees) returns(uint256 swept)
func (sweeper *Sweeper) PackBatch(accounts []common.Address, tokens [][]common.Address, amounts [][]*big.Int, fees [][]*big.Int) []byte {
	enc, err := sweeper.abi.Pack("batch", accounts, tokens, amounts, fees)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackBatch is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xeafd7ebf.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function batch(address[] accounts, address[][] tokens, uint256[][] amounts, uint256[][] fees) returns(uint256 swept)
func (sweeper *Sweeper) TryPackBatch(accounts []common.Address, tokens [][]common.Address, amounts [][]*big.Int, fees [][]*big.Int) ([]byte, error) {
	return sweeper.abi.Pack("batch", accounts, tokens, amounts, fees)
}

// UnpackBatch is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xeafd7ebf.
//
// Solidity: function batch(address[] accounts, address[][] tokens, uint256[][] amounts, uint256[][] fees) returns(uint256 swept)
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

// PackFeeAddress is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x41275358.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function feeAddress() view returns(address)
func (sweeper *Sweeper) PackFeeAddress() []byte {
	enc, err := sweeper.abi.Pack("feeAddress")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackFeeAddress is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x41275358.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function feeAddress() view returns(address)
func (sweeper *Sweeper) TryPackFeeAddress() ([]byte, error) {
	return sweeper.abi.Pack("feeAddress")
}

// UnpackFeeAddress is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x41275358.
//
// Solidity: function feeAddress() view returns(address)
func (sweeper *Sweeper) UnpackFeeAddress(data []byte) (common.Address, error) {
	out, err := sweeper.abi.Unpack("feeAddress", data)
	if err != nil {
		return *new(common.Address), err
	}
	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)
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
// the contract method with ID 0xbe83d10a.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function sweep(address[] tokens, uint256[] amounts, uint256[] fees) returns()
func (sweeper *Sweeper) PackSweep(tokens []common.Address, amounts []*big.Int, fees []*big.Int) []byte {
	enc, err := sweeper.abi.Pack("sweep", tokens, amounts, fees)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSweep is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xbe83d10a.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function sweep(address[] tokens, uint256[] amounts, uint256[] fees) returns()
func (sweeper *Sweeper) TryPackSweep(tokens []common.Address, amounts []*big.Int, fees []*big.Int) ([]byte, error) {
	return sweeper.abi.Pack("sweep", tokens, amounts, fees)
}

// SweeperNativeSwept represents a NativeSwept event raised by the Sweeper contract.
type SweeperNativeSwept struct {
	Amount *big.Int
	Fee    *big.Int
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
// Solidity: event NativeSwept(uint256 amount, uint256 fee)
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
	if bytes.Equal(raw[:4], sweeper.abi.Errors["FeeAboveAmount"].ID.Bytes()[:4]) {
		return sweeper.UnpackFeeAboveAmountError(raw[4:])
	}
	if bytes.Equal(raw[:4], sweeper.abi.Errors["FeeWithoutAddress"].ID.Bytes()[:4]) {
		return sweeper.UnpackFeeWithoutAddressError(raw[4:])
	}
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

// SweeperFeeAboveAmount represents a FeeAboveAmount error raised by the Sweeper contract.
type SweeperFeeAboveAmount struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error FeeAboveAmount()
func SweeperFeeAboveAmountErrorID() common.Hash {
	return common.HexToHash("0xcc6d87cc7dc8826312cf322d7a8868569d18e06503c883e63dcaf0f3cb8533c4")
}

// UnpackFeeAboveAmountError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error FeeAboveAmount()
func (sweeper *Sweeper) UnpackFeeAboveAmountError(raw []byte) (*SweeperFeeAboveAmount, error) {
	out := new(SweeperFeeAboveAmount)
	if err := sweeper.abi.UnpackIntoInterface(out, "FeeAboveAmount", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// SweeperFeeWithoutAddress represents a FeeWithoutAddress error raised by the Sweeper contract.
type SweeperFeeWithoutAddress struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error FeeWithoutAddress()
func SweeperFeeWithoutAddressErrorID() common.Hash {
	return common.HexToHash("0xd30224781636821e79961d73f7768f1a0a9237177ee36b0637e724cdff985263")
}

// UnpackFeeWithoutAddressError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error FeeWithoutAddress()
func (sweeper *Sweeper) UnpackFeeWithoutAddressError(raw []byte) (*SweeperFeeWithoutAddress, error) {
	out := new(SweeperFeeWithoutAddress)
	if err := sweeper.abi.UnpackIntoInterface(out, "FeeWithoutAddress", raw); err != nil {
		return nil, err
	}
	return out, nil
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
