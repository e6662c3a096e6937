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
///         - gasTank, bankroll, feeAddress and self are immutables, so they live
///           in S's code and read the same when the code runs as D (D's storage
///           is never used: a later delegation elsewhere cannot corrupt anything).
///         - sweep only obeys the gas tank or S itself (S's batch), and only
///           ever pays the bankroll and, for each asset's fee, the fee address
///           (a Sweeper without one refuses fees).
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
    /// @notice Where every sweep pays (each amount less its fee).
    address public immutable bankroll;
    /// @notice Where each sweep's fees go; address(0): no fees (a fee reverts the sweep).
    address public immutable feeAddress;
    /// @notice This contract's own address (S), also when the code runs as a delegated account.
    address private immutable self;
    /// @notice keccak256(0xef0100 || S): the code hash of an account delegated to S.
    bytes32 public immutable delegatedCodeHash;

    error Unauthorized();
    error NotSelf();
    error ZeroAddress();
    error LengthMismatch();
    error TransferFailed(address token);
    error FeeWithoutAddress();
    error FeeAboveAmount();

    /// @notice account was not swept: not delegated to this Sweeper (delegated == false), or
    ///         its sweep reverted (delegated == true, reason holds the revert data).
    event Skipped(address indexed account, bool delegated, bytes reason);
    /// @notice Emitted by a delegated account when it sweeps its ETH: amount to the bankroll,
    ///         fee to the fee address (tokens log Transfer).
    event NativeSwept(uint256 amount, uint256 fee);

    constructor(address gasTank_, address bankroll_, address feeAddress_) {
        if (gasTank_ == address(0) || bankroll_ == address(0)) revert ZeroAddress();
        gasTank = gasTank_;
        bankroll = bankroll_;
        feeAddress = feeAddress_;
        self = address(this);
        delegatedCodeHash = keccak256(abi.encodePacked(hex"ef0100", address(this)));
    }

    /// @notice A delegated deposit address accepts ETH sent with enough gas to run code.
    receive() external payable {}

    /// @notice Pays amounts[i] of tokens[i], less fees[i], to the bankroll and fees[i] to the
    ///         fee address; address(0) stands for ETH and type(uint256).max for the whole
    ///         balance. Runs as a delegated deposit address. Exact amounts let the engine move
    ///         only confirmed deposits: one that left the chain makes the balance short, the
    ///         transfer reverts and the account is skipped.
    function sweep(address[] calldata tokens, uint256[] calldata amounts, uint256[] calldata fees) external {
        if (msg.sender != gasTank && msg.sender != self) revert Unauthorized();
        if (tokens.length != amounts.length || tokens.length != fees.length) revert LengthMismatch();
        for (uint256 i = 0; i < tokens.length; ++i) {
            address token = tokens[i];
            uint256 amount = amounts[i];
            uint256 fee = fees[i];
            if (token == address(0)) {
                if (amount == type(uint256).max) amount = address(this).balance;
            } else if (amount == type(uint256).max) {
                amount = _balanceOf(token);
            }
            if (amount == 0) continue;
            if (fee > amount) revert FeeAboveAmount();
            if (fee > 0 && feeAddress == address(0)) revert FeeWithoutAddress();
            if (token == address(0)) {
                _pay(bankroll, amount - fee);
                _pay(feeAddress, fee);
                emit NativeSwept(amount - fee, fee);
                continue;
            }
            _transfer(token, bankroll, amount - fee);
            _transfer(token, feeAddress, fee);
        }
    }

    /// @notice Sweeps amounts[i][j] of tokens[i][j] (fees[i][j] of it to the fee address)
    ///         from accounts[i] for every i, in one transaction from the gas tank to this
    ///         contract (not to a delegated account).
    /// @return swept how many accounts were swept (the rest emitted Skipped).
    function batch(
        address[] calldata accounts,
        address[][] calldata tokens,
        uint256[][] calldata amounts,
        uint256[][] calldata fees
    ) external returns (uint256 swept) {
        if (msg.sender != gasTank) revert Unauthorized();
        if (address(this) != self) revert NotSelf();
        if (accounts.length != tokens.length || accounts.length != amounts.length || accounts.length != fees.length) {
            revert LengthMismatch();
        }
        for (uint256 i = 0; i < accounts.length; ++i) {
            address account = accounts[i];
            if (account.codehash != delegatedCodeHash) {
                emit Skipped(account, false, "");
                continue;
            }
            (bool ok, bytes memory reason) = account.call(abi.encodeCall(this.sweep, (tokens[i], amounts[i], fees[i])));
            if (!ok) {
                emit Skipped(account, true, reason);
                continue;
            }
            ++swept;
        }
    }

    function _pay(address to, uint256 value) private {
        if (value == 0) return;
        (bool paid,) = to.call{value: value}("");
        if (!paid) revert TransferFailed(address(0));
    }

    function _transfer(address token, address to, uint256 value) private {
        if (value == 0) return;
        // transfer(to, value); tokens that return nothing (USDT) are accepted.
        (bool ok, bytes memory ret) = token.call(abi.encodeWithSelector(0xa9059cbb, to, value));
        if (!ok || (ret.length != 0 && (ret.length < 32 || !abi.decode(ret, (bool))))) {
            revert TransferFailed(token);
        }
    }

    function _balanceOf(address token) private view returns (uint256) {
        // balanceOf(address(this))
        (bool ok, bytes memory ret) = token.staticcall(abi.encodeWithSelector(0x70a08231, address(this)));
        if (!ok || ret.length < 32) revert TransferFailed(token);
        return abi.decode(ret, (uint256));
    }
}
