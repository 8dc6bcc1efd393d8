// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IV4Token {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

struct V4PoolKey {
    address currency0;
    address currency1;
    uint24 fee;
    int24 tickSpacing;
    address hooks;
}

struct V4ModifyLiquidityParams {
    int24 tickLower;
    int24 tickUpper;
    int256 liquidityDelta;
    bytes32 salt;
}

interface IV4PoolManager {
    function unlock(bytes calldata data) external returns (bytes memory);
    function modifyLiquidity(V4PoolKey memory key, V4ModifyLiquidityParams memory params,
                             bytes calldata hookData) external returns (int256, int256);
    function sync(address currency) external;
    function settle() external payable returns (uint256);
    function take(address currency, address to, uint256 amount) external;
}

/// Positions in Uniswap V4 pools as NFTs, as V4's PositionManager keeps them: each position is
/// the manager's liquidity under the salt of its token id, and the NFT's holder is its owner
/// (a stand-in for the periphery package's own, which the lockfile does not carry).
contract V4Positions {
    IV4PoolManager public immutable manager;
    mapping(uint256 => address) public ownerOf;
    mapping(uint256 => V4PoolKey) internal keys;
    mapping(uint256 => int24[2]) internal ranges;
    uint256 public nextId = 1;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);

    constructor(IV4PoolManager manager_) {
        manager = manager_;
    }

    /// A new position of `liquidity` between two ticks for the caller, paid by it.
    function mint(V4PoolKey calldata key, int24 tickLower, int24 tickUpper, uint256 liquidity)
        external payable returns (uint256 id)
    {
        id = nextId++;
        ownerOf[id] = msg.sender;
        keys[id] = key;
        ranges[id] = [tickLower, tickUpper];
        emit Transfer(address(0), msg.sender, id);
        _modify(id, int256(liquidity), msg.sender);
    }

    /// Takes `liquidity` out of the caller's position; `burn` ends it and its NFT.
    function decrease(uint256 id, uint256 liquidity, bool burn) external {
        require(ownerOf[id] == msg.sender, "owner");
        _modify(id, -int256(liquidity), msg.sender);
        if (burn) {
            delete ownerOf[id];
            emit Transfer(msg.sender, address(0), id);
        }
    }

    function transferFrom(address from, address to, uint256 id) external {
        require(ownerOf[id] == from && msg.sender == from, "owner");
        ownerOf[id] = to;
        emit Transfer(from, to, id);
    }

    function unlockCallback(bytes calldata data) external returns (bytes memory) {
        require(msg.sender == address(manager), "manager");
        (uint256 id, int256 delta, address payer) = abi.decode(data, (uint256, int256, address));
        V4PoolKey memory key = keys[id];
        (int256 owed,) = manager.modifyLiquidity(
            key, V4ModifyLiquidityParams(ranges[id][0], ranges[id][1], delta, bytes32(id)), "");
        _settle(key.currency0, int128(owed >> 128), payer);
        _settle(key.currency1, int128(owed), payer);
        return "";
    }

    function _modify(uint256 id, int256 delta, address payer) internal {
        manager.unlock(abi.encode(id, delta, payer));
        if (address(this).balance > 0) payable(payer).transfer(address(this).balance);
    }

    /// Pays what the position owes the pool, or takes what it is owed, for `payer`.
    function _settle(address currency, int128 amount, address payer) internal {
        if (amount < 0) {
            uint256 owed = uint256(int256(-amount));
            if (currency == address(0)) {
                manager.settle{value: owed}();
            } else {
                manager.sync(currency);
                IV4Token(currency).transferFrom(payer, address(manager), owed);
                manager.settle();
            }
        } else if (amount > 0) {
            manager.take(currency, payer, uint256(int256(amount)));
        }
    }

    receive() external payable {}
}
