"""PancakeSwap V3: Uniswap V3's factory, pool and position events but for the pools' `Swap`,
which adds the protocol's fees of each side after Uniswap's words (so its topic differs)."""

from sources.evm.families import uniswap_v3

SWAP_SIGNATURE = "Swap(address,address,int256,int256,uint160,uint128,int24,uint128,uint128)"

FAMILY = uniswap_v3.family("pancakeswap_v3", SWAP_SIGNATURE)
