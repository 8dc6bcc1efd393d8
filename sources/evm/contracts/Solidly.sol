// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "./Token.sol";

interface ISolidlyToken {
    function balanceOf(address who) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function decimals() external view returns (uint8);
}

/// A Solidly-style pool (as Velodrome V2 and Aerodrome spell it): volatile (x * y) or stable
/// (x³y + y³x on amounts scaled to 18 decimals), its own LP token, the fee of each swap's input
/// sent out of the pool (to the factory here) and said by `Fees`.
contract SolidlyPool is Balances {
    uint256 public constant MINIMUM_LIQUIDITY = 1000;
    string public symbol;
    uint8 public constant decimals = 18;
    address public factory;
    address public token0;
    address public token1;
    bool public stable;
    uint256 internal decimals0;
    uint256 internal decimals1;
    uint256 public reserve0;
    uint256 public reserve1;

    event Fees(address indexed sender, uint256 amount0, uint256 amount1);
    event Mint(address indexed sender, uint256 amount0, uint256 amount1);
    event Burn(address indexed sender, address indexed to, uint256 amount0, uint256 amount1);
    event Swap(address indexed sender, address indexed to, uint256 amount0In, uint256 amount1In,
               uint256 amount0Out, uint256 amount1Out);
    event Sync(uint256 reserve0, uint256 reserve1);

    constructor(address token0_, address token1_, bool stable_) {
        factory = msg.sender;
        (token0, token1, stable) = (token0_, token1_, stable_);
        decimals0 = 10 ** ISolidlyToken(token0_).decimals();
        decimals1 = 10 ** ISolidlyToken(token1_).decimals();
        symbol = stable_ ? "sAMM" : "vAMM";
    }

    function getReserves() public view returns (uint256, uint256, uint256) {
        return (reserve0, reserve1, block.timestamp);
    }

    function mint(address to) external returns (uint256 liquidity) {
        uint256 balance0 = ISolidlyToken(token0).balanceOf(address(this));
        uint256 balance1 = ISolidlyToken(token1).balanceOf(address(this));
        uint256 amount0 = balance0 - reserve0;
        uint256 amount1 = balance1 - reserve1;
        if (totalSupply == 0) {
            liquidity = _sqrt(amount0 * amount1) - MINIMUM_LIQUIDITY;
            _mint(address(1), MINIMUM_LIQUIDITY);
        } else {
            uint256 a = amount0 * totalSupply / reserve0;
            uint256 b = amount1 * totalSupply / reserve1;
            liquidity = a < b ? a : b;
        }
        require(liquidity > 0, "liquidity");
        _mint(to, liquidity);
        _update(balance0, balance1);
        emit Mint(msg.sender, amount0, amount1);
    }

    function burn(address to) external returns (uint256 amount0, uint256 amount1) {
        uint256 liquidity = balanceOf[address(this)];
        uint256 balance0 = ISolidlyToken(token0).balanceOf(address(this));
        uint256 balance1 = ISolidlyToken(token1).balanceOf(address(this));
        amount0 = liquidity * balance0 / totalSupply;
        amount1 = liquidity * balance1 / totalSupply;
        balanceOf[address(this)] -= liquidity;
        totalSupply -= liquidity;
        emit Transfer(address(this), address(0), liquidity);
        ISolidlyToken(token0).transfer(to, amount0);
        ISolidlyToken(token1).transfer(to, amount1);
        _update(ISolidlyToken(token0).balanceOf(address(this)),
                ISolidlyToken(token1).balanceOf(address(this)));
        emit Burn(msg.sender, to, amount0, amount1);
    }

    function swap(uint256 amount0Out, uint256 amount1Out, address to, bytes calldata) external {
        require(amount0Out > 0 || amount1Out > 0, "output");
        (uint256 r0, uint256 r1) = (reserve0, reserve1);
        require(amount0Out < r0 && amount1Out < r1, "liquidity");
        if (amount0Out > 0) ISolidlyToken(token0).transfer(to, amount0Out);
        if (amount1Out > 0) ISolidlyToken(token1).transfer(to, amount1Out);
        uint256 amount0In = _input(token0, r0 - amount0Out);
        uint256 amount1In = _input(token1, r1 - amount1Out);
        require(amount0In > 0 || amount1In > 0, "input");
        _takeFees(amount0In, amount1In);
        _settle(r0, r1);
        emit Swap(msg.sender, to, amount0In, amount1In, amount0Out, amount1Out);
    }

    function _input(address token, uint256 left) internal view returns (uint256) {
        uint256 balance = ISolidlyToken(token).balanceOf(address(this));
        return balance > left ? balance - left : 0;
    }

    /// Sends the fee of each side's input out of the pool, and says so.
    function _takeFees(uint256 amount0In, uint256 amount1In) internal {
        uint256 fee = SolidlyFactory(factory).getFee(address(this), stable);
        uint256 fee0 = amount0In * fee / 10_000;
        uint256 fee1 = amount1In * fee / 10_000;
        if (fee0 > 0) ISolidlyToken(token0).transfer(factory, fee0);
        if (fee1 > 0) ISolidlyToken(token1).transfer(factory, fee1);
        if (fee0 > 0 || fee1 > 0) emit Fees(msg.sender, fee0, fee1);
    }

    /// Holds the pool to its curve against the reserves before the swap, and syncs.
    function _settle(uint256 r0, uint256 r1) internal {
        uint256 balance0 = ISolidlyToken(token0).balanceOf(address(this));
        uint256 balance1 = ISolidlyToken(token1).balanceOf(address(this));
        require(_k(balance0, balance1) >= _k(r0, r1), "K");
        _update(balance0, balance1);
    }

    /// What `amountIn` of `tokenIn` buys after the pool's fee.
    function getAmountOut(uint256 amountIn, address tokenIn) external view returns (uint256) {
        amountIn -= amountIn * SolidlyFactory(factory).getFee(address(this), stable) / 10_000;
        bool zeroIn = tokenIn == token0;
        if (!stable) {
            (uint256 rIn, uint256 rOut) = zeroIn ? (reserve0, reserve1) : (reserve1, reserve0);
            return amountIn * rOut / (rIn + amountIn);
        }
        uint256 xy = _k(reserve0, reserve1);
        uint256 s0 = reserve0 * 1e18 / decimals0;
        uint256 s1 = reserve1 * 1e18 / decimals1;
        (uint256 a, uint256 b) = zeroIn ? (s0, s1) : (s1, s0);
        uint256 scaledIn = amountIn * 1e18 / (zeroIn ? decimals0 : decimals1);
        uint256 y = b - _getY(scaledIn + a, xy, b);
        return y * (zeroIn ? decimals1 : decimals0) / 1e18;
    }

    function _k(uint256 x, uint256 y) internal view returns (uint256) {
        if (!stable) return x * y;
        uint256 sx = x * 1e18 / decimals0;
        uint256 sy = y * 1e18 / decimals1;
        return _f(sx, sy);
    }

    function _f(uint256 x, uint256 y) internal pure returns (uint256) {
        return (x * y / 1e18) * (x * x / 1e18 + y * y / 1e18) / 1e18;
    }

    function _d(uint256 x, uint256 y) internal pure returns (uint256) {
        return 3 * x * (y * y / 1e18) / 1e18 + (x * x / 1e18) * x / 1e18;
    }

    /// The y that keeps x³y + y³x at `xy` for this x, by Newton's method.
    function _getY(uint256 x, uint256 xy, uint256 y) internal pure returns (uint256) {
        for (uint256 i = 0; i < 255; i++) {
            uint256 k = _f(x, y);
            if (k < xy) {
                uint256 dy = (xy - k) * 1e18 / _d(x, y);
                if (dy == 0) {
                    if (k == xy) return y;
                    if (_f(x, y + 1) > xy) return y + 1;
                    dy = 1;
                }
                y = y + dy;
            } else {
                uint256 dy = (k - xy) * 1e18 / _d(x, y);
                if (dy == 0) {
                    if (k == xy || _f(x, y - 1) < xy) return y;
                    dy = 1;
                }
                y = y - dy;
            }
        }
        revert("y");
    }

    function _update(uint256 balance0, uint256 balance1) private {
        (reserve0, reserve1) = (balance0, balance1);
        emit Sync(balance0, balance1);
    }

    function _sqrt(uint256 y) private pure returns (uint256 z) {
        if (y > 3) {
            z = y;
            uint256 x = y / 2 + 1;
            while (x < z) {
                z = x;
                x = (y / x + x) / 2;
            }
        } else if (y != 0) {
            z = 1;
        }
    }
}

/// Makes Solidly-style pools and says so with their factory's `PoolCreated`; a pool's fee is
/// its stable or volatile default unless set for it (in basis points).
contract SolidlyFactory {
    mapping(address => mapping(address => mapping(bool => address))) public getPool;
    address[] public allPools;
    mapping(address => uint256) public customFee;
    uint256 public stableFee = 5;
    uint256 public volatileFee = 30;

    event PoolCreated(address indexed token0, address indexed token1, bool indexed stable,
                      address pool, uint256);

    function createPool(address tokenA, address tokenB, bool stable) external returns (address pool) {
        require(tokenA != tokenB, "identical");
        (address token0, address token1) = tokenA < tokenB ? (tokenA, tokenB) : (tokenB, tokenA);
        require(getPool[token0][token1][stable] == address(0), "exists");
        pool = address(new SolidlyPool(token0, token1, stable));
        getPool[token0][token1][stable] = pool;
        getPool[token1][token0][stable] = pool;
        allPools.push(pool);
        emit PoolCreated(token0, token1, stable, pool, allPools.length);
    }

    function setCustomFee(address pool, uint256 fee) external {
        customFee[pool] = fee;
    }

    function getFee(address pool, bool stable) public view returns (uint256) {
        uint256 fee = customFee[pool];
        if (fee != 0) return fee;
        return stable ? stableFee : volatileFee;
    }
}

/// Moves a trader's tokens into a Solidly-style pool and calls it, as their routers do.
contract SolidlyRouter {
    function addLiquidity(address pool, uint256 amount0, uint256 amount1, address to)
        external returns (uint256)
    {
        ISolidlyToken(SolidlyPool(pool).token0()).transferFrom(msg.sender, pool, amount0);
        ISolidlyToken(SolidlyPool(pool).token1()).transferFrom(msg.sender, pool, amount1);
        return SolidlyPool(pool).mint(to);
    }

    function removeLiquidity(address pool, uint256 liquidity, address to)
        external returns (uint256, uint256)
    {
        ISolidlyToken(pool).transferFrom(msg.sender, pool, liquidity);
        return SolidlyPool(pool).burn(to);
    }

    /// Sells exactly `amountIn` of `tokenIn` for what the pool quotes after its fee.
    function swapExactIn(address pool, address tokenIn, uint256 amountIn, address to)
        external returns (uint256 amountOut)
    {
        amountOut = SolidlyPool(pool).getAmountOut(amountIn, tokenIn);
        ISolidlyToken(tokenIn).transferFrom(msg.sender, pool, amountIn);
        if (tokenIn == SolidlyPool(pool).token0()) SolidlyPool(pool).swap(0, amountOut, to, "");
        else SolidlyPool(pool).swap(amountOut, 0, to, "");
    }
}
