-- name: pair_activity
-- grain: one row per pair with at least one swap in the longest window (chain_id, pair)
-- description: Each pair's window block for every pair window ending at the lake's watermark: swaps, buys and sells, their USD volume, and the distinct wallets that bought and sold.
WITH windowed AS (
    SELECT
        s.chain_id,
        s.pair,
        s.maker,
        s.side,
        COALESCE(s.volume_usd, 0.0) AS usd,
{%- for window, seconds in windows.items() %}
        s.block_time > a.as_of - INTERVAL '{{ seconds }} seconds' AS in_{{ window }}{{ "," if not loop.last }}
{%- endfor %}
    FROM swap_legs AS s
    CROSS JOIN as_of AS a
    WHERE s.block_time > a.as_of - INTERVAL '{{ windows | dictsort(by="value") | last | last }} seconds'
        AND s.block_time <= a.as_of
)
SELECT
    chain_id,
    pair,
{%- for window in windows %}
    SUM(CASE WHEN in_{{ window }} THEN 1 ELSE 0 END) AS txns_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'buy' THEN 1 ELSE 0 END) AS buys_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' THEN 1 ELSE 0 END) AS sells_{{ window }},
    SUM(CASE WHEN in_{{ window }} THEN usd ELSE 0.0 END) AS volume_{{ window }}_usd,
    SUM(CASE WHEN in_{{ window }} AND side = 'buy' THEN usd ELSE 0.0 END) AS buy_volume_{{ window }}_usd,
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' THEN usd ELSE 0.0 END) AS sell_volume_{{ window }}_usd,
    COUNT(DISTINCT CASE WHEN in_{{ window }} AND side = 'buy' THEN maker END) AS buyers_{{ window }},
    COUNT(DISTINCT CASE WHEN in_{{ window }} AND side = 'sell' THEN maker END) AS sellers_{{ window }},
    COUNT(DISTINCT CASE WHEN in_{{ window }} THEN maker END) AS makers_{{ window }}{{ "," if not loop.last }}
{%- endfor %}
FROM windowed
GROUP BY chain_id, pair
