// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IProbedPair {
    function getReserves() external view returns (uint112, uint112, uint32);
    function token0() external view returns (address);
    function swap(uint256 amount0Out, uint256 amount1Out, address to, bytes calldata data)
        external;
}

interface IProbedToken {
    function balanceOf(address holder) external view returns (uint256);
}

interface IWrappedNative {
    function deposit() external payable;
}

/// The honeypot test, run where it is made: an `eth_call` that creates it (nothing is ever
/// deployed) buys `token` from a constant-product `pair` with a thousandth of the pool's
/// wrapped native reserve, sells back all that arrived, and returns what each step was owed and
/// got: (bought owed, bought got, sold arrived at the pool, native got back, failed step: 0
/// none, 1 the buy, 2 the sell's transfer, 3 the sell's swap).
contract HoneypotProbe {
    constructor(address pair, address token, address wrapped, uint256 feeBps) payable {
        bytes memory out = _probe(pair, token, wrapped, feeBps);
        assembly {
            return(add(out, 32), mload(out))
        }
    }

    function _probe(address pair, address token, address wrapped, uint256 feeBps)
        private returns (bytes memory)
    {
        bool tokenFirst = IProbedPair(pair).token0() == token;
        (uint256 reserveToken, uint256 reserveNative) = _reserves(pair, tokenFirst);
        uint256 paid = reserveNative / 1000;
        IWrappedNative(wrapped).deposit{value: paid}();
        require(_transfer(wrapped, pair, paid), "wrap");
        uint256 owed = _out(paid, reserveNative, reserveToken, feeBps);
        try IProbedPair(pair).swap(tokenFirst ? owed : 0, tokenFirst ? 0 : owed, address(this), "") {
        } catch {
            return abi.encode(owed, uint256(0), uint256(0), uint256(0), uint256(1));
        }
        uint256 got = IProbedToken(token).balanceOf(address(this));
        (reserveToken, reserveNative) = _reserves(pair, tokenFirst);
        if (got == 0 || !_transfer(token, pair, got)) {
            return abi.encode(owed, got, uint256(0), uint256(0), uint256(2));
        }
        uint256 arrived = IProbedToken(token).balanceOf(pair) - reserveToken;
        uint256 back = _out(arrived, reserveToken, reserveNative, feeBps);
        try IProbedPair(pair).swap(tokenFirst ? 0 : back, tokenFirst ? back : 0, address(this), "") {
        } catch {
            return abi.encode(owed, got, arrived, uint256(0), uint256(3));
        }
        return abi.encode(owed, got, arrived, back, uint256(0));
    }

    function _reserves(address pair, bool tokenFirst) private view returns (uint256, uint256) {
        (uint112 r0, uint112 r1,) = IProbedPair(pair).getReserves();
        return tokenFirst ? (uint256(r0), uint256(r1)) : (uint256(r1), uint256(r0));
    }

    function _out(uint256 amountIn, uint256 reserveIn, uint256 reserveOut, uint256 feeBps)
        private pure returns (uint256)
    {
        uint256 taken = amountIn * (10_000 - feeBps);
        return taken * reserveOut / (reserveIn * 10_000 + taken);
    }

    /// A token transfer that tolerates tokens answering no bool (as USDT does).
    function _transfer(address token, address to, uint256 amount) private returns (bool) {
        (bool ok, bytes memory answer) =
            token.call(abi.encodeWithSelector(0xa9059cbb, to, amount));
        return ok && (answer.length == 0 || abi.decode(answer, (bool)));
    }
}
