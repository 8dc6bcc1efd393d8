-- name: board_pair_flows
-- grain: one row per pair with a swap in any board period (chain_id, pair)
-- description: Per pair and board period (the day to the watermark, the day before, the day a week before): USD volume, buy volume, swaps and wash volume (immediate round trips: a buy the same wallet sells back in the pool's very next swap, both legs), own volume (neither wash nor hosted: what the board ranks); and the day's volume other venues' routers brought into the pool (hosted).
WITH legs AS (
    SELECT
        s.chain_id,
        s.pair,
        s.maker,
        s.side,
        s.sender,
        COALESCE(s.volume_usd, 0.0) AS usd,
        a.as_of_s - s.ts AS age_s,
        LEAD(s.maker) OVER (PARTITION BY s.chain_id, s.pair ORDER BY s.block_number, s.log_index) AS next_maker,
        LEAD(s.side) OVER (PARTITION BY s.chain_id, s.pair ORDER BY s.block_number, s.log_index) AS next_side,
        LAG(s.maker) OVER (PARTITION BY s.chain_id, s.pair ORDER BY s.block_number, s.log_index) AS prev_maker,
        LAG(s.side) OVER (PARTITION BY s.chain_id, s.pair ORDER BY s.block_number, s.log_index) AS prev_side
    FROM swap_legs AS s
    CROSS JOIN as_of AS a
    WHERE s.ts > a.as_of_s - {{ board_periods.values() | map("last") | max }} AND s.ts <= a.as_of_s
),
flagged AS (
    SELECT
        l.chain_id,
        l.pair,
        l.side,
        l.usd,
        l.age_s,
        (l.side = 'buy' AND l.next_maker = l.maker AND l.next_side = 'sell')
            OR (l.side = 'sell' AND l.prev_maker = l.maker AND l.prev_side = 'buy') AS wash,
        COALESCE(v.venue_id IS NOT NULL
            AND v.venue_id <> COALESCE(pt.venue_id, '')
            AND v.venue_id <> COALESCE(pt.launchpad, ''), FALSE) AS hosted
    FROM legs AS l
    JOIN pair_tokens AS pt ON l.chain_id = pt.chain_id AND l.pair = pt.pair
    LEFT JOIN venues AS v ON l.chain_id = v.chain_id AND l.sender = v.router
)
SELECT
    chain_id,
    pair,
{%- for period, (ends, starts) in board_periods.items() %}
    SUM(CASE WHEN age_s >= {{ ends }} AND age_s < {{ starts }} THEN usd ELSE 0.0 END) AS volume_{{ period }},
    SUM(CASE WHEN age_s >= {{ ends }} AND age_s < {{ starts }} AND side = 'buy' THEN usd ELSE 0.0 END) AS buy_volume_{{ period }},
    SUM(CASE WHEN age_s >= {{ ends }} AND age_s < {{ starts }} THEN 1 ELSE 0 END) AS txns_{{ period }},
    SUM(CASE WHEN age_s >= {{ ends }} AND age_s < {{ starts }} AND wash THEN usd ELSE 0.0 END) AS wash_volume_{{ period }},
    SUM(CASE WHEN age_s >= {{ ends }} AND age_s < {{ starts }} AND NOT wash AND NOT hosted THEN usd ELSE 0.0 END) AS own_volume_{{ period }},
{%- endfor %}
    SUM(CASE WHEN age_s < {{ board_periods.now[1] }} AND hosted THEN usd ELSE 0.0 END) AS hosted_volume_now
FROM flagged
GROUP BY chain_id, pair
