// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Balances} from "Token.sol";

/// An ERC-20 that takes a fee on transfer, as taxed meme tokens do: a buy (a transfer out of
/// one of its pools) pays the buy tax, a sell (a transfer into one) the sell tax, each in
/// basis points and sent to the owner; the owner may change them, and may block every sell
/// but its own (a honeypot). The owner's own transfers pay nothing.
contract TaxToken is Balances, Ownable {
    string public name;
    string public symbol;
    uint8 public decimals = 18;
    uint256 public buyTaxBps;
    uint256 public sellTaxBps;
    bool public sellsBlocked;
    mapping(address => bool) public isPool;

    constructor(string memory name_, string memory symbol_, uint256 supply) {
        name = name_;
        symbol = symbol_;
        _mint(msg.sender, supply);
    }

    function setTaxes(uint256 buyBps, uint256 sellBps) external onlyOwner {
        require(buyBps <= 10_000 && sellBps <= 10_000, "tax");
        buyTaxBps = buyBps;
        sellTaxBps = sellBps;
    }

    function setPool(address pool, bool taxed) external onlyOwner {
        isPool[pool] = taxed;
    }

    function blockSells(bool blocked) external onlyOwner {
        sellsBlocked = blocked;
    }

    function _move(address from, address to, uint256 value) internal override {
        address keeper = owner();
        if (from == keeper || to == keeper) {
            super._move(from, to, value);
            return;
        }
        require(!(sellsBlocked && isPool[to]), "sells blocked");
        uint256 bps = isPool[from] ? buyTaxBps : (isPool[to] ? sellTaxBps : 0);
        uint256 fee = value * bps / 10_000;
        if (fee > 0) {
            super._move(from, keeper, fee);
        }
        super._move(from, to, value - fee);
    }
}
