-- name: holder_balances
-- grain: one row per token and holding address with a positive balance (chain_id, token, holder)
-- description: What every address holds of every token at the lake's watermark, from supply mints and wallet moves, swaps (paid in by the maker, paid out to the recipient) and the liquidity a wallet added or removed; pools and the mint address are not holders.
WITH live_transfers AS (
    SELECT t.* FROM transfers AS t CROSS JOIN as_of AS a WHERE t.block_time <= a.as_of
),
-- Swaps are summed per pair and wallet first: millions of swaps fold into far fewer
-- (pair, wallet) rows before they fan out to the pair's two tokens.
paid_in AS (
    SELECT s.chain_id, s.pair, s.maker AS holder, SUM(s.amount0_in) AS amount0,
           SUM(s.amount1_in) AS amount1
    FROM swaps AS s
    CROSS JOIN as_of AS a
    WHERE s.block_time <= a.as_of
    GROUP BY s.chain_id, s.pair, s.maker
),
paid_out AS (
    SELECT s.chain_id, s.pair, s.recipient AS holder, SUM(s.amount0_out) AS amount0,
           SUM(s.amount1_out) AS amount1
    FROM swaps AS s
    CROSS JOIN as_of AS a
    WHERE s.block_time <= a.as_of
    GROUP BY s.chain_id, s.pair, s.recipient
),
live_swaps AS (
    SELECT o.chain_id, o.holder, p.token0, p.token1, o.amount0, o.amount1
    FROM paid_out AS o
    JOIN pairs AS p ON o.chain_id = p.chain_id AND o.pair = p.address
    UNION ALL
    SELECT i.chain_id, i.holder, p.token0, p.token1, 0 - i.amount0 AS amount0,
           0 - i.amount1 AS amount1
    FROM paid_in AS i
    JOIN pairs AS p ON i.chain_id = p.chain_id AND i.pair = p.address
),
live_liquidity AS (
    SELECT l.chain_id, l.owner, p.token0, p.token1,
           CASE WHEN l.kind = 'mint' THEN 0 - l.amount0 ELSE l.amount0 END AS amount0,
           CASE WHEN l.kind = 'mint' THEN 0 - l.amount1 ELSE l.amount1 END AS amount1
    FROM liquidity_events AS l
    JOIN pairs AS p ON l.chain_id = p.chain_id AND l.pair = p.address
    CROSS JOIN as_of AS a
    WHERE l.block_time <= a.as_of
),
moves AS (
    SELECT chain_id, token, to_address AS holder, amount
    FROM live_transfers
    UNION ALL
    SELECT chain_id, token, from_address AS holder, 0 - amount AS amount
    FROM live_transfers
    UNION ALL
    SELECT chain_id, token0 AS token, holder, amount0 AS amount FROM live_swaps
    UNION ALL
    SELECT chain_id, token1 AS token, holder, amount1 AS amount FROM live_swaps
    UNION ALL
    SELECT chain_id, token0 AS token, owner AS holder, amount0 AS amount
    FROM live_liquidity
    UNION ALL
    SELECT chain_id, token1 AS token, owner AS holder, amount1 AS amount
    FROM live_liquidity
),
mint_addresses AS (
    SELECT DISTINCT t.chain_id, t.from_address AS address
    FROM live_transfers AS t
    JOIN tokens AS k ON t.chain_id = k.chain_id AND t.token = k.address AND t.tx_hash = k.deploy_tx
),
balances AS (
    SELECT chain_id, token, holder, SUM(amount) AS raw_balance
    FROM moves
    GROUP BY chain_id, token, holder
)
SELECT b.chain_id, b.token, b.holder, CAST(b.raw_balance AS DOUBLE) / POWER(10.0, t.decimals) AS balance
FROM balances AS b
JOIN tokens AS t ON b.chain_id = t.chain_id AND b.token = t.address
LEFT JOIN pairs AS p ON b.chain_id = p.chain_id AND b.holder = p.address
LEFT JOIN mint_addresses AS m ON b.chain_id = m.chain_id AND b.holder = m.address
WHERE b.raw_balance > 0 AND p.address IS NULL AND m.address IS NULL
