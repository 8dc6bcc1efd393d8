-- name: pair_activity
-- grain: one row per pair with at least one swap in the longest window (chain_id, pair)
-- description: Swap counts and USD volume per pair in every pair window ending at the lake's watermark.
SELECT
    s.chain_id,
    s.pair,
{%- for window, seconds in windows.items() %}
    SUM(CASE WHEN s.block_time > a.as_of - INTERVAL '{{ seconds }} seconds' THEN 1 ELSE 0 END) AS txns_{{ window }},
    SUM(CASE WHEN s.block_time > a.as_of - INTERVAL '{{ seconds }} seconds' THEN COALESCE(s.volume_usd, 0.0) ELSE 0.0 END)
        AS volume_{{ window }}_usd{{ "," if not loop.last }}
{%- endfor %}
FROM swap_legs AS s
CROSS JOIN as_of AS a
WHERE s.block_time > a.as_of - INTERVAL '{{ windows | dictsort(by="value") | last | last }} seconds'
    AND s.block_time <= a.as_of
GROUP BY s.chain_id, s.pair
