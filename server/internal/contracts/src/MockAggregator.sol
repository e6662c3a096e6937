// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title MockAggregator
/// @notice Chainlink AggregatorV3Interface-compatible price feed for the coffer
///         dev chain and tests. The deployer can push new answers; each push
///         starts a new round stamped with the current block timestamp.
contract MockAggregator {
    struct Round {
        int256 answer;
        uint256 startedAt;
        uint256 updatedAt;
    }

    uint8 public immutable decimals;
    string public description;
    uint256 public constant version = 4;
    address public immutable owner;

    uint80 public latestRound;
    mapping(uint80 => Round) private rounds;

    event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt);
    event NewRound(uint256 indexed roundId, address indexed startedBy, uint256 startedAt);

    error NotOwner();
    error NoDataPresent();

    constructor(uint8 decimals_, string memory description_, int256 initialAnswer) {
        decimals = decimals_;
        description = description_;
        owner = msg.sender;
        _setAnswer(initialAnswer);
    }

    function setAnswer(int256 answer) external {
        if (msg.sender != owner) revert NotOwner();
        _setAnswer(answer);
    }

    function latestAnswer() external view returns (int256) {
        return rounds[latestRound].answer;
    }

    function latestTimestamp() external view returns (uint256) {
        return rounds[latestRound].updatedAt;
    }

    function latestRoundData()
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        return getRoundData(latestRound);
    }

    function getRoundData(uint80 roundId_)
        public
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        Round memory r = rounds[roundId_];
        if (r.updatedAt == 0) revert NoDataPresent();
        return (roundId_, r.answer, r.startedAt, r.updatedAt, roundId_);
    }

    function _setAnswer(int256 answer) internal {
        uint80 id = latestRound + 1;
        latestRound = id;
        rounds[id] = Round({answer: answer, startedAt: block.timestamp, updatedAt: block.timestamp});
        emit NewRound(id, msg.sender, block.timestamp);
        emit AnswerUpdated(answer, id, block.timestamp);
    }
}
