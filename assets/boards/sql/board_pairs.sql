-- name: board_pairs
-- grain: one row per pair created by the watermark (chain_id, pair)
-- description: What a pair brings to the leaderboard: the row it counts in (its launchpad when it has one, else the venue owning its factory; none for pools nobody can name), its liquidity now, a day and a week before, its quality, scam and activity flags, and its flows per board period (perp markets' from their notional volume).
{% set periods = board_periods.items() | list %}
WITH perp_flows AS (
    SELECT
        p.chain_id,
        p.market AS pair,
{%- for period, (ends, starts) in periods %}
        SUM(CASE WHEN p.observed_at <= a.as_of - INTERVAL '{{ ends }} seconds'
                  AND p.observed_at > a.as_of - INTERVAL '{{ starts }} seconds'
                 THEN p.volume_usd ELSE 0.0 END) AS volume_{{ period }}{{ "," if not loop.last }}
{%- endfor %}
    FROM perp_snapshots AS p
    CROSS JOIN as_of AS a
    WHERE p.observed_at <= a.as_of
    GROUP BY p.chain_id, p.market
),
launchpads AS (
    SELECT DISTINCT chain_id, venue_id, name FROM venues WHERE category = 'launchpad'
)
SELECT
    pt.chain_id,
    pt.pair,
    COALESCE(pt.launchpad, pt.venue_id) AS row_key,
    CASE WHEN pt.launchpad IS NOT NULL THEN 'launchpad' ELSE pt.venue_category END AS category,
    COALESCE(lp.name, pt.venue_name) AS row_name,
    pt.venue_name,
    pt.is_perp,
    pt.launchpad,
    pt.created_at,
    pt.created_at > a.as_of_minus_day AS is_new,
    COALESCE(r.is_scam, FALSE) AS is_scam,
    pt.is_perp OR ps.price_usd IS NOT NULL AS priced,
    COALESCE(ps.liquidity_usd, 0.0) AS liquidity_now,
    COALESCE(ps.liquidity_usd_24h_ago, 0.0) AS liquidity_d1,
    COALESCE(ps.liquidity_usd_7d_ago, 0.0) AS liquidity_d7,
    NOT COALESCE(r.is_scam, FALSE)
        AND (pt.is_perp OR COALESCE(ps.liquidity_usd, 0.0) >= c.min_liquidity_usd) AS tradable,
    CASE WHEN NOT COALESCE(r.is_scam, FALSE) AND COALESCE(ps.liquidity_usd, 0.0) >= c.min_liquidity_usd
         THEN ps.liquidity_usd ELSE 0.0 END AS quality_liquidity_now,
{%- for period, _ in periods %}
    COALESCE(f.volume_{{ period }}, 0.0) + COALESCE(pf.volume_{{ period }}, 0.0) AS volume_{{ period }},
    COALESCE(f.buy_volume_{{ period }}, 0.0) AS buy_volume_{{ period }},
    COALESCE(f.txns_{{ period }}, 0) AS txns_{{ period }},
    COALESCE(f.wash_volume_{{ period }}, 0.0) AS wash_volume_{{ period }},
    COALESCE(f.own_volume_{{ period }}, 0.0) + COALESCE(pf.volume_{{ period }}, 0.0) AS own_volume_{{ period }},
{%- endfor %}
    COALESCE(f.hosted_volume_now, 0.0) AS hosted_volume_now
FROM pair_tokens AS pt
CROSS JOIN as_of AS a
JOIN chains AS c ON pt.chain_id = c.chain_id
LEFT JOIN launchpads AS lp ON pt.chain_id = lp.chain_id AND pt.launchpad = lp.venue_id
LEFT JOIN pair_risk AS r ON pt.chain_id = r.chain_id AND pt.pair = r.pair
LEFT JOIN pair_state AS ps ON pt.chain_id = ps.chain_id AND pt.pair = ps.pair
LEFT JOIN board_pair_flows AS f ON pt.chain_id = f.chain_id AND pt.pair = f.pair
LEFT JOIN perp_flows AS pf ON pt.chain_id = pf.chain_id AND pt.pair = pf.pair
WHERE pt.created_at <= a.as_of
