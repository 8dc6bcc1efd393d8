-- name: token_activity
-- grain: one row per token with at least one swap in the longest window (chain_id, token)
-- description: Each token's window block over all its pairs, ending at the lake's watermark: a swap buys the token when the token left the pool (a sell of the base buys the quote), with USD volume, distinct buyers, sellers and makers across pairs.
WITH legs AS (
    SELECT s.chain_id, pt.base AS token, s.maker, s.side, s.block_time,
           COALESCE(s.volume_usd, 0.0) AS usd
    FROM swap_legs AS s
    JOIN pair_tokens AS pt ON s.chain_id = pt.chain_id AND s.pair = pt.pair
    UNION ALL
    SELECT s.chain_id, pt.quote AS token, s.maker,
           CASE WHEN s.side = 'buy' THEN 'sell' ELSE 'buy' END AS side, s.block_time,
           COALESCE(s.volume_usd, 0.0) AS usd
    FROM swap_legs AS s
    JOIN pair_tokens AS pt ON s.chain_id = pt.chain_id AND s.pair = pt.pair
),
windowed AS (
    SELECT
        l.chain_id,
        l.token,
        l.maker,
        l.side,
        l.usd,
{%- for window, seconds in windows.items() %}
        l.block_time > a.as_of - INTERVAL '{{ seconds }} seconds' AS in_{{ window }}{{ "," if not loop.last }}
{%- endfor %}
    FROM legs AS l
    CROSS JOIN as_of AS a
    WHERE l.block_time > a.as_of - INTERVAL '{{ windows | dictsort(by="value") | last | last }} seconds'
        AND l.block_time <= a.as_of
)
SELECT
    chain_id,
    token,
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
GROUP BY chain_id, token
