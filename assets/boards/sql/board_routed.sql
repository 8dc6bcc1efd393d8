-- name: board_routed
-- grain: one row per aggregator that routed a swap in the day to the watermark (chain_id, venue_id)
-- description: What each aggregator routed into other venues' pools over the day: its USD volume and swaps. Aggregators own no pools, so this volume is counted where it traded.
SELECT
    v.chain_id,
    v.venue_id,
    SUM(f.volume) AS routed_volume_now,
    SUM(f.txns) AS routed_txns_now
FROM board_router_flows AS f
JOIN venues AS v ON f.chain_id = v.chain_id AND f.sender = v.router
WHERE v.category = 'aggregator' AND f.period = 'now'
GROUP BY v.chain_id, v.venue_id
