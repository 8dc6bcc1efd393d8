-- name: holder_balances
-- grain: one row per token and holding address with a positive balance (chain_id, token, holder)
-- description: What every address holds of every token at the lake's watermark, from supply mints and wallet moves, swaps (paid in by the maker, paid out to the recipient) and the liquidity a wallet added or removed; pools and the mint address are not holders.
WITH live_transfers AS (
    SELECT t.* FROM transfers AS t CROSS JOIN as_of AS a WHERE t.block_time <= a.as_of
),
-- Swaps are summed per pair, maker and recipient first, then netted per pair and wallet:
-- millions of swaps fold into far fewer rows before they fan out to the pair's two tokens.
-- Each side is a row of a two-row VALUES table rather than a second reference to the CTE,
-- which the engine would compute again.
flows AS (
    SELECT s.chain_id, s.pair, s.maker, s.recipient,
           SUM(CAST(s.amount0_in AS HUGEINT)) AS in0, SUM(CAST(s.amount1_in AS HUGEINT)) AS in1,
           SUM(CAST(s.amount0_out AS HUGEINT)) AS out0, SUM(CAST(s.amount1_out AS HUGEINT)) AS out1
    FROM swaps AS s
    CROSS JOIN as_of AS a
    WHERE s.block_time <= a.as_of
    GROUP BY s.chain_id, s.pair, s.maker, s.recipient
),
pair_nets AS (
    SELECT chain_id, pair, holder, SUM(amount0) AS amount0, SUM(amount1) AS amount1
    FROM (
        SELECT f.chain_id, f.pair,
               CASE WHEN d.paid = 1 THEN f.maker ELSE f.recipient END AS holder,
               CASE WHEN d.paid = 1 THEN 0 - f.in0 ELSE f.out0 END AS amount0,
               CASE WHEN d.paid = 1 THEN 0 - f.in1 ELSE f.out1 END AS amount1
        FROM flows AS f
        CROSS JOIN (VALUES (1), (0)) AS d(paid)
    ) AS sides
    GROUP BY chain_id, pair, holder
),
swap_moves AS (
    SELECT n.chain_id,
           CASE WHEN k.second = 1 THEN p.token1 ELSE p.token0 END AS token,
           n.holder,
           CASE WHEN k.second = 1 THEN n.amount1 ELSE n.amount0 END AS amount
    FROM pair_nets AS n
    JOIN pairs AS p ON n.chain_id = p.chain_id AND n.pair = p.address
    CROSS JOIN (VALUES (0), (1)) AS k(second)
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
    SELECT chain_id, token, holder, amount FROM swap_moves
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
