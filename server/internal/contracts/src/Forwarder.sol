// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IERC20Transfer {
    function transfer(address to, uint256 value) external returns (bool);
}

/// @title Forwarder
/// @notice Test contract that pays several recipients in one transaction, as a
///         Safe or an exchange's batch payout does: its native payments are
///         internal transfers (found only by tracing), its token payments are
///         several Transfer logs in one transaction.
contract Forwarder {
    error LengthMismatch();
    error PaymentFailed(address to);
    error Rejected();

    /// @notice Sends amounts[i] wei to to[i]. msg.value pays for them; any
    ///         rest stays in this contract.
    function forward(address payable[] calldata to, uint256[] calldata amounts) external payable {
        if (to.length != amounts.length) revert LengthMismatch();
        for (uint256 i = 0; i < to.length; i++) {
            _pay(to[i], amounts[i]);
        }
    }

    /// @notice Like forward, but each payment runs in its own call frame
    ///         (this.pay) that reverts after paying when rejected[i] is set.
    ///         A rejected payment is caught and ignored: its wei never left,
    ///         although the trace shows a transfer inside the reverted frame.
    function forwardRejecting(address payable[] calldata to, uint256[] calldata amounts, bool[] calldata rejected)
        external
        payable
    {
        if (to.length != amounts.length || to.length != rejected.length) revert LengthMismatch();
        for (uint256 i = 0; i < to.length; i++) {
            try this.pay{value: amounts[i]}(to[i], rejected[i]) {} catch {}
        }
    }

    /// @notice Pays msg.value to `to`, then reverts if told to.
    function pay(address payable to, bool thenRevert) external payable {
        _pay(to, msg.value);
        if (thenRevert) revert Rejected();
    }

    /// @notice Transfers amounts[i] of token (held by this contract) to to[i].
    function forwardTokens(address token, address[] calldata to, uint256[] calldata amounts) external {
        if (to.length != amounts.length) revert LengthMismatch();
        for (uint256 i = 0; i < to.length; i++) {
            if (!IERC20Transfer(token).transfer(to[i], amounts[i])) revert PaymentFailed(to[i]);
        }
    }

    /// @notice Runs until its gas is gone, so a transaction calling it uses all its gas limit:
    ///         tests fill blocks with it to raise the base fee.
    function burn() external pure {
        for (;;) {}
    }

    receive() external payable {}

    function _pay(address payable to, uint256 amount) private {
        (bool ok,) = to.call{value: amount}("");
        if (!ok) revert PaymentFailed(to);
    }
}
