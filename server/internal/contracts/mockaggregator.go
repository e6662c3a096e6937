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

// MockAggregatorMetaData contains all meta data concerning the MockAggregator contract.
var MockAggregatorMetaData = bind.MetaData{
	ABI: "[{\"inputs\":[{\"internalType\":\"uint8\",\"name\":\"decimals_\",\"type\":\"uint8\"},{\"internalType\":\"string\",\"name\":\"description_\",\"type\":\"string\"},{\"internalType\":\"int256\",\"name\":\"initialAnswer\",\"type\":\"int256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[],\"name\":\"NoDataPresent\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"NotOwner\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"int256\",\"name\":\"current\",\"type\":\"int256\"},{\"indexed\":true,\"internalType\":\"uint256\",\"name\":\"roundId\",\"type\":\"uint256\"},{\"indexed\":false,\"internalType\":\"uint256\",\"name\":\"updatedAt\",\"type\":\"uint256\"}],\"name\":\"AnswerUpdated\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"uint256\",\"name\":\"roundId\",\"type\":\"uint256\"},{\"indexed\":true,\"internalType\":\"address\",\"name\":\"startedBy\",\"type\":\"address\"},{\"indexed\":false,\"internalType\":\"uint256\",\"name\":\"startedAt\",\"type\":\"uint256\"}],\"name\":\"NewRound\",\"type\":\"event\"},{\"inputs\":[],\"name\":\"decimals\",\"outputs\":[{\"internalType\":\"uint8\",\"name\":\"\",\"type\":\"uint8\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"description\",\"outputs\":[{\"internalType\":\"string\",\"name\":\"\",\"type\":\"string\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"uint80\",\"name\":\"roundId_\",\"type\":\"uint80\"}],\"name\":\"getRoundData\",\"outputs\":[{\"internalType\":\"uint80\",\"name\":\"roundId\",\"type\":\"uint80\"},{\"internalType\":\"int256\",\"name\":\"answer\",\"type\":\"int256\"},{\"internalType\":\"uint256\",\"name\":\"startedAt\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"updatedAt\",\"type\":\"uint256\"},{\"internalType\":\"uint80\",\"name\":\"answeredInRound\",\"type\":\"uint80\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"latestAnswer\",\"outputs\":[{\"internalType\":\"int256\",\"name\":\"\",\"type\":\"int256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"latestRound\",\"outputs\":[{\"internalType\":\"uint80\",\"name\":\"\",\"type\":\"uint80\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"latestRoundData\",\"outputs\":[{\"internalType\":\"uint80\",\"name\":\"roundId\",\"type\":\"uint80\"},{\"internalType\":\"int256\",\"name\":\"answer\",\"type\":\"int256\"},{\"internalType\":\"uint256\",\"name\":\"startedAt\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"updatedAt\",\"type\":\"uint256\"},{\"internalType\":\"uint80\",\"name\":\"answeredInRound\",\"type\":\"uint80\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"latestTimestamp\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"owner\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"int256\",\"name\":\"answer\",\"type\":\"int256\"}],\"name\":\"setAnswer\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"version\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"}]",
	ID:  "MockAggregator",
	Bin: "0x60c060405234801561000f575f5ffd5b5060405161099838038061099883398101604081905261002e91610164565b60ff83166080525f61004083826102c7565b503360a05261004e81610056565b5050506103b6565b600180545f9161006f916001600160501b031690610385565b600180546001600160501b0383166001600160501b031990911681178255604080516060810182528681524260208083018281528385018381525f878152600293849052869020945185559051968401969096559451919094015551929350339290917f0109fc6f55cf40689f02fbaad7af7fe7bbac8a3d2186600afc7d3e10cac602719161010091815260200190565b60405180910390a3806001600160501b0316827f0559884fd3a460db3073b7fc896cc77986f16e378210ded43186175bf646fc5f4260405161014491815260200190565b60405180910390a35050565b634e487b7160e01b5f52604160045260245ffd5b5f5f5f60608486031215610176575f5ffd5b835160ff81168114610186575f5ffd5b60208501519093506001600160401b038111156101a1575f5ffd5b8401601f810186136101b1575f5ffd5b80516001600160401b038111156101ca576101ca610150565b604051601f8201601f19908116603f011681016001600160401b03811182821017156101f8576101f8610150565b60405281815282820160200188101561020f575f5ffd5b8160208401602083015e5f91810160200191909152604095909501519396949550929392505050565b600181811c9082168061024c57607f821691505b60208210810361026a57634e487b7160e01b5f52602260045260245ffd5b50919050565b601f8211156102c257828211156102c257805f5260205f20601f840160051c602085101561029b57505f5b90810190601f840160051c035f5b818110156102be575f838201556001016102a9565b5050505b505050565b81516001600160401b038111156102e0576102e0610150565b6102f4816102ee8454610238565b84610270565b6020601f821160018114610326575f831561030f5750848201515b5f19600385901b1c1916600184901b17845561037e565b5f84815260208120601f198516915b828110156103555787850151825560209485019460019092019101610335565b508482101561037257868401515f19600387901b60f8161c191681555b505060018360011b0184555b5050505050565b6001600160501b0381811683821601908111156103b057634e487b7160e01b5f52601160045260245ffd5b92915050565b60805160a0516105bb6103dd5f395f818161017601526102aa01525f60a401526105bb5ff3fe608060405234801561000f575f5ffd5b506004361061009b575f3560e01c80638205bf6a116100635780638205bf6a1461014e5780638da5cb5b1461017157806399213cd8146101b05780639a6fc8f5146101c5578063feaf968c1461020c575f5ffd5b8063313ce5671461009f57806350d25bcd146100dd57806354fd4d5014610106578063668a0f021461010e5780637284e41614610139575b5f5ffd5b6100c67f000000000000000000000000000000000000000000000000000000000000000081565b60405160ff90911681526020015b60405180910390f35b6001546001600160501b03165f908152600260205260409020545b6040519081526020016100d4565b6100f8600481565b600154610121906001600160501b031681565b6040516001600160501b0390911681526020016100d4565b610141610214565b6040516100d491906104a3565b6001546001600160501b03165f90815260026020819052604090912001546100f8565b6101987f000000000000000000000000000000000000000000000000000000000000000081565b6040516001600160a01b0390911681526020016100d4565b6101c36101be3660046104d8565b61029f565b005b6101d86101d33660046104ef565b6102f4565b604080516001600160501b03968716815260208101959095528401929092526060830152909116608082015260a0016100d4565b6101d8610376565b5f80546102209061051c565b80601f016020809104026020016040519081016040528092919081815260200182805461024c9061051c565b80156102975780601f1061026e57610100808354040283529160200191610297565b820191905f5260205f20905b81548152906001019060200180831161027a57829003601f168201915b505050505081565b336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146102e8576040516330cd747160e01b815260040160405180910390fd5b6102f1816103a6565b50565b6001600160501b0381165f9081526002602081815260408084208151606081018352815481526001820154938101939093529092015491810182905282918291829182919082036103575760405162bb258760e81b815260040160405180910390fd5b8051602082015160409092015197989097919650909450879350915050565b6001545f908190819081908190610395906001600160501b03166102f4565b945094509450945094509091929394565b600180545f916103bf916001600160501b031690610554565b600180546001600160501b03831669ffffffffffffffffffff1990911681178255604080516060810182528681524260208083018281528385018381525f878152600293849052869020945185559051968401969096559451919094015551929350339290917f0109fc6f55cf40689f02fbaad7af7fe7bbac8a3d2186600afc7d3e10cac602719161045391815260200190565b60405180910390a3806001600160501b0316827f0559884fd3a460db3073b7fc896cc77986f16e378210ded43186175bf646fc5f4260405161049791815260200190565b60405180910390a35050565b602081525f82518060208401528060208501604085015e5f604082850101526040601f19601f83011684010191505092915050565b5f602082840312156104e8575f5ffd5b5035919050565b5f602082840312156104ff575f5ffd5b81356001600160501b0381168114610515575f5ffd5b9392505050565b600181811c9082168061053057607f821691505b60208210810361054e57634e487b7160e01b5f52602260045260245ffd5b50919050565b6001600160501b03818116838216019081111561057f57634e487b7160e01b5f52601160045260245ffd5b9291505056fea264697066735822122045e3e4ed33157474de87a21945e5a2dfe8b1de2963837e968142f168571ad9c564736f6c63430008250033",
}

// MockAggregator is an auto generated Go binding around an Ethereum contract.
type MockAggregator struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *MockAggregator) GetABI() abi.ABI {
	return c.abi
}

// NewMockAggregator creates a new instance of MockAggregator.
func NewMockAggregator() *MockAggregator {
	parsed, err := MockAggregatorMetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &MockAggregator{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *MockAggregator) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackConstructor is the Go binding used to pack the parameters required for
// contract deployment.
//
// Solidity: constructor(uint8 decimals_, string description_, int256 initialAnswer) returns()
func (mockAggregator *MockAggregator) PackConstructor(decimals_ uint8, description_ string, initialAnswer *big.Int) []byte {
	enc, err := mockAggregator.abi.Pack("", decimals_, description_, initialAnswer)
	if err != nil {
		panic(err)
	}
	return enc
}

// PackDecimals is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x313ce567.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function decimals() view returns(uint8)
func (mockAggregator *MockAggregator) PackDecimals() []byte {
	enc, err := mockAggregator.abi.Pack("decimals")
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
func (mockAggregator *MockAggregator) TryPackDecimals() ([]byte, error) {
	return mockAggregator.abi.Pack("decimals")
}

// UnpackDecimals is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x313ce567.
//
// Solidity: function decimals() view returns(uint8)
func (mockAggregator *MockAggregator) UnpackDecimals(data []byte) (uint8, error) {
	out, err := mockAggregator.abi.Unpack("decimals", data)
	if err != nil {
		return *new(uint8), err
	}
	out0 := *abi.ConvertType(out[0], new(uint8)).(*uint8)
	return out0, nil
}

// PackDescription is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x7284e416.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function description() view returns(string)
func (mockAggregator *MockAggregator) PackDescription() []byte {
	enc, err := mockAggregator.abi.Pack("description")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackDescription is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x7284e416.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function description() view returns(string)
func (mockAggregator *MockAggregator) TryPackDescription() ([]byte, error) {
	return mockAggregator.abi.Pack("description")
}

// UnpackDescription is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x7284e416.
//
// Solidity: function description() view returns(string)
func (mockAggregator *MockAggregator) UnpackDescription(data []byte) (string, error) {
	out, err := mockAggregator.abi.Unpack("description", data)
	if err != nil {
		return *new(string), err
	}
	out0 := *abi.ConvertType(out[0], new(string)).(*string)
	return out0, nil
}

// PackGetRoundData is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x9a6fc8f5.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function getRoundData(uint80 roundId_) view returns(uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
func (mockAggregator *MockAggregator) PackGetRoundData(roundId *big.Int) []byte {
	enc, err := mockAggregator.abi.Pack("getRoundData", roundId)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackGetRoundData is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x9a6fc8f5.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function getRoundData(uint80 roundId_) view returns(uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
func (mockAggregator *MockAggregator) TryPackGetRoundData(roundId *big.Int) ([]byte, error) {
	return mockAggregator.abi.Pack("getRoundData", roundId)
}

// GetRoundDataOutput serves as a container for the return parameters of contract
// method GetRoundData.
type GetRoundDataOutput struct {
	RoundId         *big.Int
	Answer          *big.Int
	StartedAt       *big.Int
	UpdatedAt       *big.Int
	AnsweredInRound *big.Int
}

// UnpackGetRoundData is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x9a6fc8f5.
//
// Solidity: function getRoundData(uint80 roundId_) view returns(uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
func (mockAggregator *MockAggregator) UnpackGetRoundData(data []byte) (GetRoundDataOutput, error) {
	out, err := mockAggregator.abi.Unpack("getRoundData", data)
	outstruct := new(GetRoundDataOutput)
	if err != nil {
		return *outstruct, err
	}
	outstruct.RoundId = abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	outstruct.Answer = abi.ConvertType(out[1], new(big.Int)).(*big.Int)
	outstruct.StartedAt = abi.ConvertType(out[2], new(big.Int)).(*big.Int)
	outstruct.UpdatedAt = abi.ConvertType(out[3], new(big.Int)).(*big.Int)
	outstruct.AnsweredInRound = abi.ConvertType(out[4], new(big.Int)).(*big.Int)
	return *outstruct, nil
}

// PackLatestAnswer is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x50d25bcd.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function latestAnswer() view returns(int256)
func (mockAggregator *MockAggregator) PackLatestAnswer() []byte {
	enc, err := mockAggregator.abi.Pack("latestAnswer")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackLatestAnswer is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x50d25bcd.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function latestAnswer() view returns(int256)
func (mockAggregator *MockAggregator) TryPackLatestAnswer() ([]byte, error) {
	return mockAggregator.abi.Pack("latestAnswer")
}

// UnpackLatestAnswer is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x50d25bcd.
//
// Solidity: function latestAnswer() view returns(int256)
func (mockAggregator *MockAggregator) UnpackLatestAnswer(data []byte) (*big.Int, error) {
	out, err := mockAggregator.abi.Unpack("latestAnswer", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackLatestRound is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x668a0f02.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function latestRound() view returns(uint80)
func (mockAggregator *MockAggregator) PackLatestRound() []byte {
	enc, err := mockAggregator.abi.Pack("latestRound")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackLatestRound is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x668a0f02.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function latestRound() view returns(uint80)
func (mockAggregator *MockAggregator) TryPackLatestRound() ([]byte, error) {
	return mockAggregator.abi.Pack("latestRound")
}

// UnpackLatestRound is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x668a0f02.
//
// Solidity: function latestRound() view returns(uint80)
func (mockAggregator *MockAggregator) UnpackLatestRound(data []byte) (*big.Int, error) {
	out, err := mockAggregator.abi.Unpack("latestRound", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackLatestRoundData is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xfeaf968c.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function latestRoundData() view returns(uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
func (mockAggregator *MockAggregator) PackLatestRoundData() []byte {
	enc, err := mockAggregator.abi.Pack("latestRoundData")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackLatestRoundData is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xfeaf968c.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function latestRoundData() view returns(uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
func (mockAggregator *MockAggregator) TryPackLatestRoundData() ([]byte, error) {
	return mockAggregator.abi.Pack("latestRoundData")
}

// LatestRoundDataOutput serves as a container for the return parameters of contract
// method LatestRoundData.
type LatestRoundDataOutput struct {
	RoundId         *big.Int
	Answer          *big.Int
	StartedAt       *big.Int
	UpdatedAt       *big.Int
	AnsweredInRound *big.Int
}

// UnpackLatestRoundData is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xfeaf968c.
//
// Solidity: function latestRoundData() view returns(uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
func (mockAggregator *MockAggregator) UnpackLatestRoundData(data []byte) (LatestRoundDataOutput, error) {
	out, err := mockAggregator.abi.Unpack("latestRoundData", data)
	outstruct := new(LatestRoundDataOutput)
	if err != nil {
		return *outstruct, err
	}
	outstruct.RoundId = abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	outstruct.Answer = abi.ConvertType(out[1], new(big.Int)).(*big.Int)
	outstruct.StartedAt = abi.ConvertType(out[2], new(big.Int)).(*big.Int)
	outstruct.UpdatedAt = abi.ConvertType(out[3], new(big.Int)).(*big.Int)
	outstruct.AnsweredInRound = abi.ConvertType(out[4], new(big.Int)).(*big.Int)
	return *outstruct, nil
}

// PackLatestTimestamp is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8205bf6a.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function latestTimestamp() view returns(uint256)
func (mockAggregator *MockAggregator) PackLatestTimestamp() []byte {
	enc, err := mockAggregator.abi.Pack("latestTimestamp")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackLatestTimestamp is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8205bf6a.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function latestTimestamp() view returns(uint256)
func (mockAggregator *MockAggregator) TryPackLatestTimestamp() ([]byte, error) {
	return mockAggregator.abi.Pack("latestTimestamp")
}

// UnpackLatestTimestamp is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x8205bf6a.
//
// Solidity: function latestTimestamp() view returns(uint256)
func (mockAggregator *MockAggregator) UnpackLatestTimestamp(data []byte) (*big.Int, error) {
	out, err := mockAggregator.abi.Unpack("latestTimestamp", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackOwner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8da5cb5b.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function owner() view returns(address)
func (mockAggregator *MockAggregator) PackOwner() []byte {
	enc, err := mockAggregator.abi.Pack("owner")
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
func (mockAggregator *MockAggregator) TryPackOwner() ([]byte, error) {
	return mockAggregator.abi.Pack("owner")
}

// UnpackOwner is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x8da5cb5b.
//
// Solidity: function owner() view returns(address)
func (mockAggregator *MockAggregator) UnpackOwner(data []byte) (common.Address, error) {
	out, err := mockAggregator.abi.Unpack("owner", data)
	if err != nil {
		return *new(common.Address), err
	}
	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)
	return out0, nil
}

// PackSetAnswer is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x99213cd8.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function setAnswer(int256 answer) returns()
func (mockAggregator *MockAggregator) PackSetAnswer(answer *big.Int) []byte {
	enc, err := mockAggregator.abi.Pack("setAnswer", answer)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSetAnswer is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x99213cd8.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function setAnswer(int256 answer) returns()
func (mockAggregator *MockAggregator) TryPackSetAnswer(answer *big.Int) ([]byte, error) {
	return mockAggregator.abi.Pack("setAnswer", answer)
}

// PackVersion is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x54fd4d50.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function version() view returns(uint256)
func (mockAggregator *MockAggregator) PackVersion() []byte {
	enc, err := mockAggregator.abi.Pack("version")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackVersion is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x54fd4d50.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function version() view returns(uint256)
func (mockAggregator *MockAggregator) TryPackVersion() ([]byte, error) {
	return mockAggregator.abi.Pack("version")
}

// UnpackVersion is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x54fd4d50.
//
// Solidity: function version() view returns(uint256)
func (mockAggregator *MockAggregator) UnpackVersion(data []byte) (*big.Int, error) {
	out, err := mockAggregator.abi.Unpack("version", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// MockAggregatorAnswerUpdated represents a AnswerUpdated event raised by the MockAggregator contract.
type MockAggregatorAnswerUpdated struct {
	Current   *big.Int
	RoundId   *big.Int
	UpdatedAt *big.Int
	Raw       *types.Log // Blockchain specific contextual infos
}

const MockAggregatorAnswerUpdatedEventName = "AnswerUpdated"

// ContractEventName returns the user-defined event name.
func (MockAggregatorAnswerUpdated) ContractEventName() string {
	return MockAggregatorAnswerUpdatedEventName
}

// UnpackAnswerUpdatedEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt)
func (mockAggregator *MockAggregator) UnpackAnswerUpdatedEvent(log *types.Log) (*MockAggregatorAnswerUpdated, error) {
	event := "AnswerUpdated"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != mockAggregator.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(MockAggregatorAnswerUpdated)
	if len(log.Data) > 0 {
		if err := mockAggregator.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range mockAggregator.abi.Events[event].Inputs {
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

// MockAggregatorNewRound represents a NewRound event raised by the MockAggregator contract.
type MockAggregatorNewRound struct {
	RoundId   *big.Int
	StartedBy common.Address
	StartedAt *big.Int
	Raw       *types.Log // Blockchain specific contextual infos
}

const MockAggregatorNewRoundEventName = "NewRound"

// ContractEventName returns the user-defined event name.
func (MockAggregatorNewRound) ContractEventName() string {
	return MockAggregatorNewRoundEventName
}

// UnpackNewRoundEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event NewRound(uint256 indexed roundId, address indexed startedBy, uint256 startedAt)
func (mockAggregator *MockAggregator) UnpackNewRoundEvent(log *types.Log) (*MockAggregatorNewRound, error) {
	event := "NewRound"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != mockAggregator.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(MockAggregatorNewRound)
	if len(log.Data) > 0 {
		if err := mockAggregator.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range mockAggregator.abi.Events[event].Inputs {
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
func (mockAggregator *MockAggregator) UnpackError(raw []byte) (any, error) {
	if bytes.Equal(raw[:4], mockAggregator.abi.Errors["NoDataPresent"].ID.Bytes()[:4]) {
		return mockAggregator.UnpackNoDataPresentError(raw[4:])
	}
	if bytes.Equal(raw[:4], mockAggregator.abi.Errors["NotOwner"].ID.Bytes()[:4]) {
		return mockAggregator.UnpackNotOwnerError(raw[4:])
	}
	return nil, errors.New("Unknown error")
}

// MockAggregatorNoDataPresent represents a NoDataPresent error raised by the MockAggregator contract.
type MockAggregatorNoDataPresent struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NoDataPresent()
func MockAggregatorNoDataPresentErrorID() common.Hash {
	return common.HexToHash("0xbb258700699f4449978821f51700c766295ef133e7bb6177607142c8d88db786")
}

// UnpackNoDataPresentError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NoDataPresent()
func (mockAggregator *MockAggregator) UnpackNoDataPresentError(raw []byte) (*MockAggregatorNoDataPresent, error) {
	out := new(MockAggregatorNoDataPresent)
	if err := mockAggregator.abi.UnpackIntoInterface(out, "NoDataPresent", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// MockAggregatorNotOwner represents a NotOwner error raised by the MockAggregator contract.
type MockAggregatorNotOwner struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NotOwner()
func MockAggregatorNotOwnerErrorID() common.Hash {
	return common.HexToHash("0x30cd74712f59d478562d48e2d35de830db72c60a63dd08ae59199eec990b5bc4")
}

// UnpackNotOwnerError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NotOwner()
func (mockAggregator *MockAggregator) UnpackNotOwnerError(raw []byte) (*MockAggregatorNotOwner, error) {
	out := new(MockAggregatorNotOwner)
	if err := mockAggregator.abi.UnpackIntoInterface(out, "NotOwner", raw); err != nil {
		return nil, err
	}
	return out, nil
}
