// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// The balances, allowances and events every ERC-20 of these contracts shares.
abstract contract Balances {
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            require(allowed >= value, "allowance");
            allowance[from][msg.sender] = allowed - value;
        }
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) internal virtual {
        require(balanceOf[from] >= value, "balance");
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }

    function _mint(address to, uint256 value) internal {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }
}

/// A plain ERC-20 whose deployer holds the whole supply.
contract Token is Balances {
    string public name;
    string public symbol;
    uint8 public decimals;

    constructor(string memory name_, string memory symbol_, uint8 decimals_, uint256 supply) {
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
        _mint(msg.sender, supply);
    }
}

/// An ERC-20 of the early kind whose name and symbol are bytes32 (as MKR's are).
contract Bytes32Token is Balances {
    bytes32 public name;
    bytes32 public symbol;
    uint8 public decimals = 18;

    constructor(bytes32 name_, bytes32 symbol_, uint256 supply) {
        name = name_;
        symbol = symbol_;
        _mint(msg.sender, supply);
    }
}
