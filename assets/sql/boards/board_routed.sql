-- name: board_routed
-- grain: one row per aggregator that routed a swap in the day to the watermark (chain_id, venue_id)
-- description: What each aggregator routed into other venues' pools over the day: its USD volume and swaps. Aggregators own no pools, so this volume is counted where it traded.
SELECT
    v.chain_id,
    v.venue_id,
    SUM(COALESCE(s.volume_usd, 0.0)) AS routed_volume_now,
    COUNT(*) AS routed_txns_now
FROM swap_legs AS s
CROSS JOIN as_of AS a
JOIN venues AS v ON s.chain_id = v.chain_id AND s.sender = v.router
WHERE v.category = 'aggregator' AND s.ts > a.as_of_s - {{ day_s }} AND s.ts <= a.as_of_s
GROUP BY v.chain_id, v.venue_id
