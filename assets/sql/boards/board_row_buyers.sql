-- name: board_row_buyers
-- grain: one row per board and row: (scope 'protocols', chain_id, row_key) and (scope 'chains', chain_id, row_key null)
-- description: Distinct wallets that bought in the day to the watermark, per protocol row and per chain: a wallet buying on two of a row's pools counts once.
WITH buys AS (
    SELECT DISTINCT s.chain_id, bp.row_key, s.maker
    FROM swap_legs AS s
    CROSS JOIN as_of AS a
    JOIN board_pairs AS bp ON s.chain_id = bp.chain_id AND s.pair = bp.pair
    WHERE s.side = 'buy' AND s.ts > a.as_of_s - {{ day_s }} AND s.ts <= a.as_of_s
)
SELECT 'protocols' AS scope, chain_id, row_key, COUNT(*) AS buyers_now
FROM buys
WHERE row_key IS NOT NULL
GROUP BY chain_id, row_key
UNION ALL
SELECT 'chains' AS scope, chain_id, CAST(NULL AS VARCHAR) AS row_key, COUNT(DISTINCT maker) AS buyers_now
FROM buys
GROUP BY chain_id
