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
	ABI: "[{\"inputs\":[{\"internalType\":\"address\",\"name\":\"gasTank_\",\"type\":\"address\"},{\"internalType\":\"address\",\"name\":\"bankroll_\",\"type\":\"address\"}],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[],\"name\":\"LengthMismatch\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"NotSelf\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"token\",\"type\":\"address\"}],\"name\":\"TransferFailed\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"Unauthorized\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"ZeroAddress\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":false,\"internalType\":\"uint256\",\"name\":\"amount\",\"type\":\"uint256\"}],\"name\":\"NativeSwept\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"address\",\"name\":\"account\",\"type\":\"address\"},{\"indexed\":false,\"internalType\":\"bool\",\"name\":\"delegated\",\"type\":\"bool\"},{\"indexed\":false,\"internalType\":\"bytes\",\"name\":\"reason\",\"type\":\"bytes\"}],\"name\":\"Skipped\",\"type\":\"event\"},{\"inputs\":[],\"name\":\"bankroll\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address[]\",\"name\":\"accounts\",\"type\":\"address[]\"},{\"internalType\":\"address[][]\",\"name\":\"tokens\",\"type\":\"address[][]\"},{\"internalType\":\"uint256[][]\",\"name\":\"amounts\",\"type\":\"uint256[][]\"}],\"name\":\"batch\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"swept\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"delegatedCodeHash\",\"outputs\":[{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"gasTank\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address[]\",\"name\":\"tokens\",\"type\":\"address[]\"},{\"internalType\":\"uint256[]\",\"name\":\"amounts\",\"type\":\"uint256[]\"}],\"name\":\"sweep\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"stateMutability\":\"payable\",\"type\":\"receive\"}]",
	ID:  "Sweeper",
	Bin: "0x610100604052348015610010575f5ffd5b50604051610d20380380610d2083398101604081905261002f916100ef565b6001600160a01b038216158061004c57506001600160a01b038116155b1561006a5760405163d92e233d60e01b815260040160405180910390fd5b6001600160a01b03808316608052811660a0523060c08190526040516100b1919060200161ef0160f01b815260609190911b6001600160601b031916600382015260170190565b60408051601f19818403018152919052805160209091012060e052506101209050565b80516001600160a01b03811681146100ea575f5ffd5b919050565b5f5f60408385031215610100575f5ffd5b610109836100d4565b9150610117602084016100d4565b90509250929050565b60805160a05160c05160e051610ba661017a5f395f818160b8015261025301525f81816101af015261047501525f8181606801528181610554015261064b01525f818160f90152818161016701526104410152610ba65ff3fe60806040526004361061004c575f3560e01c80630c657eb014610057578063185da24e146100a75780637be52e59146100e85780639163e1621461011b5780639ed6c6f61461013a575f5ffd5b3661005357005b5f5ffd5b348015610062575f5ffd5b5061008a7f000000000000000000000000000000000000000000000000000000000000000081565b6040516001600160a01b0390911681526020015b60405180910390f35b3480156100b2575f5ffd5b506100da7f000000000000000000000000000000000000000000000000000000000000000081565b60405190815260200161009e565b3480156100f3575f5ffd5b5061008a7f000000000000000000000000000000000000000000000000000000000000000081565b348015610126575f5ffd5b506100da6101353660046108a8565b61015b565b348015610145575f5ffd5b50610159610154366004610947565b610436565b005b5f336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146101a4576040516282b42960e81b815260040160405180910390fd5b306001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146101ed576040516314e1dbf760e11b815260040160405180910390fd5b85841415806101fc5750858214155b1561021d576040516001621398b960e31b0319815260040160405180910390fd5b5f5b8681101561042b575f88888381811061023a5761023a6109b3565b905060200201602081019061024f91906109e2565b90507f0000000000000000000000000000000000000000000000000000000000000000816001600160a01b03163f146102db57806001600160a01b03167f14f629279ba984fe6722c06164473c13fbe65426c2d2218a59550111afe47d615f6040516102cd91151581526040602082018190525f9082015260600190565b60405180910390a250610423565b5f806001600160a01b03831630639ed6c6f68b8b888181106102ff576102ff6109b3565b90506020028101906103119190610a02565b8b8b8a818110610323576103236109b3565b90506020028101906103359190610a02565b6040516024016103489493929190610a48565b60408051601f198184030181529181526020820180516001600160e01b031660e09490941b9390931790925290516103809250610ac2565b5f604051808303815f865af19150503d805f81146103b9576040519150601f19603f3d011682016040523d82523d5f602084013e6103be565b606091505b50915091508161041457826001600160a01b03167f14f629279ba984fe6722c06164473c13fbe65426c2d2218a59550111afe47d61600183604051610404929190610ad8565b60405180910390a2505050610423565b61041d85610b16565b94505050505b60010161021f565b509695505050505050565b336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016148015906104985750336001600160a01b037f00000000000000000000000000000000000000000000000000000000000000001614155b156104b5576040516282b42960e81b815260040160405180910390fd5b8281146104d8576040516001621398b960e31b0319815260040160405180910390fd5b5f5b8381101561076e575f8585838181106104f5576104f56109b3565b905060200201602081019061050a91906109e2565b90505f84848481811061051f5761051f6109b3565b60200291909101359150506001600160a01b038216610623575f1981036105435750475b805f03610551575050610766565b5f7f00000000000000000000000000000000000000000000000000000000000000006001600160a01b0316826040515f6040518083038185875af1925050503d805f81146105ba576040519150601f19603f3d011682016040523d82523d5f602084013e6105bf565b606091505b50509050806105e8576040516339f1c8d960e01b81525f60048201526024015b60405180910390fd5b6040518281527f1ed033bc10f1dd641f4df398853976d2b76ee062cce863301929fe8ee8336faa9060200160405180910390a1505050610766565b5f1981036106375761063482610775565b90505b805f03610645575050610766565b604080517f00000000000000000000000000000000000000000000000000000000000000006001600160a01b039081166024830152604480830185905283518084039091018152606490920183526020820180516001600160e01b031663a9059cbb60e01b17905291515f928392908616916106c19190610ac2565b5f604051808303815f865af19150503d805f81146106fa576040519150601f19603f3d011682016040523d82523d5f602084013e6106ff565b606091505b5091509150811580610738575080511580159061073857506020815110806107385750808060200190518101906107369190610b3a565b155b15610761576040516339f1c8d960e01b81526001600160a01b03851660048201526024016105df565b505050505b6001016104da565b5050505050565b604080513060248083019190915282518083039091018152604490910182526020810180516001600160e01b03166370a0823160e01b17905290515f91829182916001600160a01b038616916107cb9190610ac2565b5f60405180830381855afa9150503d805f8114610803576040519150601f19603f3d011682016040523d82523d5f602084013e610808565b606091505b509150915081158061081b575060208151105b15610844576040516339f1c8d960e01b81526001600160a01b03851660048201526024016105df565b808060200190518101906108589190610b59565b949350505050565b5f5f83601f840112610870575f5ffd5b50813567ffffffffffffffff811115610887575f5ffd5b6020830191508360208260051b85010111156108a1575f5ffd5b9250929050565b5f5f5f5f5f5f606087890312156108bd575f5ffd5b863567ffffffffffffffff8111156108d3575f5ffd5b6108df89828a01610860565b909750955050602087013567ffffffffffffffff8111156108fe575f5ffd5b61090a89828a01610860565b909550935050604087013567ffffffffffffffff811115610929575f5ffd5b61093589828a01610860565b979a9699509497509295939492505050565b5f5f5f5f6040858703121561095a575f5ffd5b843567ffffffffffffffff811115610970575f5ffd5b61097c87828801610860565b909550935050602085013567ffffffffffffffff81111561099b575f5ffd5b6109a787828801610860565b95989497509550505050565b634e487b7160e01b5f52603260045260245ffd5b80356001600160a01b03811681146109dd575f5ffd5b919050565b5f602082840312156109f2575f5ffd5b6109fb826109c7565b9392505050565b5f5f8335601e19843603018112610a17575f5ffd5b83018035915067ffffffffffffffff821115610a31575f5ffd5b6020019150600581901b36038213156108a1575f5ffd5b604080825281018490525f8560608301825b87811015610a88576001600160a01b03610a73846109c7565b16825260209283019290910190600101610a5a565b5083810360208501528481526001600160fb1b03851115610aa7575f5ffd5b8460051b915081866020830137016020019695505050505050565b5f82518060208501845e5f920191825250919050565b8215158152604060208201525f82518060408401528060208501606085015e5f606082850101526060601f19601f8301168401019150509392505050565b5f60018201610b3357634e487b7160e01b5f52601160045260245ffd5b5060010190565b5f60208284031215610b4a575f5ffd5b815180151581146109fb575f5ffd5b5f60208284031215610b69575f5ffd5b505191905056fea2646970667358221220faa679c0315da4a287fb422aa2065deb085a32d143f2a5e26ee939de99fec22b64736f6c63430008250033",
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
// the contract method with ID 0x9163e162.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function batch(address[] accounts, address[][] tokens, uint256[][] amounts) returns(uint256 swept)
func (sweeper *Sweeper) PackBatch(accounts []common.Address, tokens [][]common.Address, amounts [][]*big.Int) []byte {
	enc, err := sweeper.abi.Pack("batch", accounts, tokens, amounts)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackBatch is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x9163e162.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function batch(address[] accounts, address[][] tokens, uint256[][] amounts) returns(uint256 swept)
func (sweeper *Sweeper) TryPackBatch(accounts []common.Address, tokens [][]common.Address, amounts [][]*big.Int) ([]byte, error) {
	return sweeper.abi.Pack("batch", accounts, tokens, amounts)
}

// UnpackBatch is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x9163e162.
//
// Solidity: function batch(address[] accounts, address[][] tokens, uint256[][] amounts) returns(uint256 swept)
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
// the contract method with ID 0x9ed6c6f6.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function sweep(address[] tokens, uint256[] amounts) returns()
func (sweeper *Sweeper) PackSweep(tokens []common.Address, amounts []*big.Int) []byte {
	enc, err := sweeper.abi.Pack("sweep", tokens, amounts)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSweep is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x9ed6c6f6.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function sweep(address[] tokens, uint256[] amounts) returns()
func (sweeper *Sweeper) TryPackSweep(tokens []common.Address, amounts []*big.Int) ([]byte, error) {
	return sweeper.abi.Pack("sweep", tokens, amounts)
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
