// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Sweeper
/// @notice The EIP-7702 delegate of Coffer's token-deposit addresses, and the
///         batcher that sweeps them.
///
///         One Sweeper is deployed per chain (at address S). A deposit address
///         D signs an EIP-7702 authorization once, so its code becomes
///         0xef0100 || S: calls to D run this code with D's balance and
///         storage. The gas tank then sends ONE transaction to S.batch, which
///         calls D.sweep on every listed deposit address; no top-up, no ETH
///         dust on D.
///
///         Rules:
///         - gasTank, bankroll and self are immutables, so they live in S's
///           code and read the same when the code runs as D (D's storage is
///           never used: a later delegation elsewhere cannot corrupt anything).
///         - sweep only obeys the gas tank or S itself (S's batch), and only
///           ever pays the bankroll.
///         - batch only obeys the gas tank and checks that each account is
///           still delegated to S (its code hash is that of 0xef0100 || S):
///           a cleared delegation leaves D without code, and a call to an
///           account without code "succeeds" doing nothing, so success alone
///           proves nothing. An account that is not delegated to S, or whose
///           sweep reverts, is skipped with a Skipped event; the others in the
///           batch are swept. Each account's sweep is atomic.
///         - ETH sent to D with enough gas is accepted (receive) and swept
///           when tokens lists address(0). A 21,000-gas transfer to D fails
///           at the sender (D has code), so native deposits must not use
///           delegated addresses.
contract Sweeper {
    /// @notice The only account allowed to call batch and sweep.
    address public immutable gasTank;
    /// @notice Where every sweep pays.
    address public immutable bankroll;
    /// @notice This contract's own address (S), also when the code runs as a delegated account.
    address private immutable self;
    /// @notice keccak256(0xef0100 || S): the code hash of an account delegated to S.
    bytes32 public immutable delegatedCodeHash;

    error Unauthorized();
    error NotSelf();
    error ZeroAddress();
    error LengthMismatch();
    error TransferFailed(address token);

    /// @notice account was not swept: not delegated to this Sweeper (delegated == false), or
    ///         its sweep reverted (delegated == true, reason holds the revert data).
    event Skipped(address indexed account, bool delegated, bytes reason);
    /// @notice Emitted by a delegated account when it sweeps its ETH (tokens log Transfer).
    event NativeSwept(uint256 amount);

    constructor(address gasTank_, address bankroll_) {
        if (gasTank_ == address(0) || bankroll_ == address(0)) revert ZeroAddress();
        gasTank = gasTank_;
        bankroll = bankroll_;
        self = address(this);
        delegatedCodeHash = keccak256(abi.encodePacked(hex"ef0100", address(this)));
    }

    /// @notice A delegated deposit address accepts ETH sent with enough gas to run code.
    receive() external payable {}

    /// @notice Pays amounts[i] of tokens[i] to the bankroll; address(0) stands for ETH and
    ///         type(uint256).max for the whole balance. Runs as a delegated deposit address.
    ///         Exact amounts let the engine move only confirmed deposits: one that left the
    ///         chain makes the balance short, the transfer reverts and the account is skipped.
    function sweep(address[] calldata tokens, uint256[] calldata amounts) external {
        if (msg.sender != gasTank && msg.sender != self) revert Unauthorized();
        if (tokens.length != amounts.length) revert LengthMismatch();
        for (uint256 i = 0; i < tokens.length; ++i) {
            address token = tokens[i];
            uint256 amount = amounts[i];
            if (token == address(0)) {
                if (amount == type(uint256).max) amount = address(this).balance;
                if (amount == 0) continue;
                (bool paid,) = bankroll.call{value: amount}("");
                if (!paid) revert TransferFailed(address(0));
                emit NativeSwept(amount);
                continue;
            }
            if (amount == type(uint256).max) amount = _balanceOf(token);
            if (amount == 0) continue;
            // transfer(bankroll, amount); tokens that return nothing (USDT) are accepted.
            (bool ok, bytes memory ret) = token.call(abi.encodeWithSelector(0xa9059cbb, bankroll, amount));
            if (!ok || (ret.length != 0 && (ret.length < 32 || !abi.decode(ret, (bool))))) {
                revert TransferFailed(token);
            }
        }
    }

    /// @notice Sweeps amounts[i][j] of tokens[i][j] from accounts[i] for every i, in one
    ///         transaction from the gas tank to this contract (not to a delegated account).
    /// @return swept how many accounts were swept (the rest emitted Skipped).
    function batch(address[] calldata accounts, address[][] calldata tokens, uint256[][] calldata amounts)
        external
        returns (uint256 swept)
    {
        if (msg.sender != gasTank) revert Unauthorized();
        if (address(this) != self) revert NotSelf();
        if (accounts.length != tokens.length || accounts.length != amounts.length) revert LengthMismatch();
        for (uint256 i = 0; i < accounts.length; ++i) {
            address account = accounts[i];
            if (account.codehash != delegatedCodeHash) {
                emit Skipped(account, false, "");
                continue;
            }
            (bool ok, bytes memory reason) = account.call(abi.encodeCall(this.sweep, (tokens[i], amounts[i])));
            if (!ok) {
                emit Skipped(account, true, reason);
                continue;
            }
            ++swept;
        }
    }

    function _balanceOf(address token) private view returns (uint256) {
        // balanceOf(address(this))
        (bool ok, bytes memory ret) = token.staticcall(abi.encodeWithSelector(0x70a08231, address(this)));
        if (!ok || ret.length < 32) revert TransferFailed(token);
        return abi.decode(ret, (uint256));
    }
}
