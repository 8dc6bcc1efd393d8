// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Balances} from "Token.sol";

/// An ERC-20 owned as OpenZeppelin's `Ownable` owns: its owner alone may mint and set a fee,
/// the owner-only powers a token's ownership is read for.
contract OwnedToken is Balances, Ownable {
    string public name;
    string public symbol;
    uint8 public decimals = 18;
    uint256 public fee;

    constructor(string memory name_, string memory symbol_, uint256 supply) {
        name = name_;
        symbol = symbol_;
        _mint(msg.sender, supply);
    }

    function mint(address to, uint256 value) external onlyOwner {
        _mint(to, value);
    }

    function setFee(uint256 fee_) external onlyOwner {
        fee = fee_;
    }
}
