// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IPancakeToken {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

interface IPancakePool {
    function token0() external view returns (address);
    function token1() external view returns (address);
    function mint(address recipient, int24 tickLower, int24 tickUpper, uint128 amount,
                  bytes calldata data) external returns (uint256, uint256);
    function swap(address recipient, bool zeroForOne, int256 amountSpecified,
                  uint160 sqrtPriceLimitX96, bytes calldata data) external returns (int256, int256);
}

/// Deploys PancakeSwap V3 pools for its factory as its PancakeV3PoolDeployer does (the pool's
/// constructor asks `parameters()`), from the pool's creation code as PancakeSwap's v3-core
/// ships it, held as the code of the contract `code` (the package ships no deployer).
contract PancakeV3PoolDeployer {
    struct Parameters {
        address factory;
        address token0;
        address token1;
        uint24 fee;
        int24 tickSpacing;
    }

    Parameters public parameters;
    address public immutable code;

    constructor(address code_) {
        code = code_;
    }

    function deploy(address factory, address token0, address token1, uint24 fee,
                    int24 tickSpacing) external returns (address pool) {
        parameters = Parameters(factory, token0, token1, fee, tickSpacing);
        bytes memory init = code.code;
        bytes32 salt = keccak256(abi.encode(token0, token1, fee));
        assembly {
            pool := create2(0, add(init, 32), mload(init), salt)
        }
        require(pool != address(0), "deploy");
        delete parameters;
    }
}

/// Adds liquidity to and swaps on PancakeSwap V3 pools for the caller, paying the pool from
/// the caller's allowance in its callbacks (the periphery's work, without its NFTs).
contract PancakeV3Callee {
    uint160 internal constant MIN_SQRT_RATIO = 4295128739;
    uint160 internal constant MAX_SQRT_RATIO = 1461446703485210103287273052203988822378723970342;

    function mint(address pool, int24 tickLower, int24 tickUpper, uint128 amount) external {
        IPancakePool(pool).mint(msg.sender, tickLower, tickUpper, amount, abi.encode(msg.sender));
    }

    /// Sells exactly `amountIn` of token0 (`zeroForOne`) or token1 for `to`.
    function swapExactIn(address pool, bool zeroForOne, uint256 amountIn, address to) external {
        IPancakePool(pool).swap(to, zeroForOne, int256(amountIn),
                                zeroForOne ? MIN_SQRT_RATIO + 1 : MAX_SQRT_RATIO - 1,
                                abi.encode(msg.sender));
    }

    function pancakeV3MintCallback(uint256 amount0, uint256 amount1, bytes calldata data) external {
        _pay(abi.decode(data, (address)), amount0, amount1);
    }

    function pancakeV3SwapCallback(int256 delta0, int256 delta1, bytes calldata data) external {
        _pay(abi.decode(data, (address)), delta0 > 0 ? uint256(delta0) : 0,
             delta1 > 0 ? uint256(delta1) : 0);
    }

    function _pay(address payer, uint256 amount0, uint256 amount1) internal {
        if (amount0 > 0) IPancakeToken(IPancakePool(msg.sender).token0()).transferFrom(payer, msg.sender, amount0);
        if (amount1 > 0) IPancakeToken(IPancakePool(msg.sender).token1()).transferFrom(payer, msg.sender, amount1);
    }
}
