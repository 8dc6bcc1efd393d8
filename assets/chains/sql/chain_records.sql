-- name: chain_records
-- grain: one row per chain (chain_id)
-- description: The chain record of /config and /chains: indexing progress, pair, scam and deployer counts, liquidity, volume and the day's gainer and loser.
WITH head AS (
    SELECT h.chain_id, h.indexed_block, h.head_block,
           h.indexed_block_time, h.head_block_time,
           ROW_NUMBER() OVER (PARTITION BY h.chain_id ORDER BY h.observed_at DESC) AS rn
    FROM heads AS h CROSS JOIN as_of AS a
    WHERE h.observed_at <= a.as_of
),
head_before AS (
    SELECT h.chain_id, h.indexed_block,
           ROW_NUMBER() OVER (PARTITION BY h.chain_id ORDER BY h.observed_at DESC) AS rn
    FROM heads AS h CROSS JOIN as_of AS a
    WHERE h.observed_at <= a.as_of_minus_sync
),
progress AS (
    SELECT n.chain_id, n.indexed_block AS latest_block, n.head_block,
           CAST(EXTRACT(EPOCH FROM n.head_block_time) - EXTRACT(EPOCH FROM n.indexed_block_time)
                AS BIGINT) AS block_lag_seconds,
           n.indexed_block > COALESCE(b.indexed_block, -1) AS syncing
    FROM head AS n
    LEFT JOIN head_before AS b ON n.chain_id = b.chain_id AND b.rn = 1
    WHERE n.rn = 1
),
pairs_now AS (
    SELECT pt.*, COALESCE(r.is_scam, FALSE) AS is_scam,
           COALESCE(r.scam_on_pool, FALSE) AS scam_on_pool,
           COALESCE(r.scam_inherited, FALSE) AS scam_inherited,
           ps.liquidity_usd, ps.price_change_24h,
           COALESCE(pa.txns_h24, 0) AS txns_24h, COALESCE(pa.volume_h24_usd, 0.0) AS volume_24h,
           pt.created_at > a.as_of_minus_day AS is_new,
           COALESCE(ps.liquidity_usd, 0.0) >= c.min_liquidity_usd AS above_min
    FROM pair_tokens AS pt
    CROSS JOIN as_of AS a
    JOIN chains AS c ON pt.chain_id = c.chain_id
    LEFT JOIN pair_risk AS r ON pt.chain_id = r.chain_id AND pt.pair = r.pair
    LEFT JOIN pair_state AS ps ON pt.chain_id = ps.chain_id AND pt.pair = ps.pair
    LEFT JOIN pair_activity AS pa ON pt.chain_id = pa.chain_id AND pt.pair = pa.pair
    WHERE pt.created_at <= a.as_of
),
pair_counts AS (
    SELECT chain_id,
           COUNT(*) AS pairs,
           SUM(txns_24h) AS txns_24h,
           SUM(CASE WHEN is_new AND NOT is_scam THEN 1 ELSE 0 END) AS new_pairs_24h,
           SUM(CASE WHEN is_new THEN 1 ELSE 0 END) AS new_pairs_24h_total,
           SUM(CASE WHEN is_scam THEN 1 ELSE 0 END) AS scams_total,
           SUM(CASE WHEN scam_on_pool THEN 1 ELSE 0 END) AS scams_on_pool,
           SUM(CASE WHEN scam_inherited THEN 1 ELSE 0 END) AS scams_inherited,
           SUM(CASE WHEN is_scam AND is_new THEN 1 ELSE 0 END) AS scams_24h,
           SUM(COALESCE(liquidity_usd, 0.0)) AS liquidity_usd,
           SUM(volume_24h) AS volume_24h_usd,
           SUM(CASE WHEN above_min AND NOT is_scam THEN liquidity_usd ELSE 0.0 END)
               AS quality_liquidity_usd
    FROM pairs_now
    GROUP BY chain_id
),
venue_names AS (
    SELECT pn.chain_id,
           ARRAY_AGG(DISTINCT pn.venue_name ORDER BY pn.venue_name) AS protocols
    FROM pairs_now AS pn
    WHERE pn.venue_name IS NOT NULL
    GROUP BY pn.chain_id
),
dex_names AS (
    SELECT pn.chain_id, ARRAY_AGG(DISTINCT pn.venue_name ORDER BY pn.venue_name) AS dex_names
    FROM pairs_now AS pn
    WHERE pn.venue_category = 'dex'
    GROUP BY pn.chain_id
),
movers AS (
    SELECT chain_id, pair, ticker, price_change_24h,
           ROW_NUMBER() OVER (PARTITION BY chain_id ORDER BY price_change_24h DESC, pair) AS up,
           ROW_NUMBER() OVER (PARTITION BY chain_id ORDER BY price_change_24h ASC, pair) AS down
    FROM pairs_now
    WHERE above_min AND NOT is_scam AND NOT is_perp AND price_change_24h IS NOT NULL
),
deployer_firsts AS (
    SELECT t.chain_id, t.deployer, MIN(t.deployed_at) AS first_deploy,
           MAX(CASE WHEN t.status IN ({{ terminal_statuses | join(', ') }})
                      OR t.honeypot_test = 'fail' THEN 1 ELSE 0 END) AS abused
    FROM tokens AS t
    WHERE NOT t.is_quote AND t.total_supply_raw > 0
    GROUP BY t.chain_id, t.deployer
),
deployers AS (
    SELECT d.chain_id, COUNT(*) AS deployers_total,
           SUM(CASE WHEN d.first_deploy > a.as_of_minus_day THEN 1 ELSE 0 END)
               AS new_deployers_24h,
           SUM(d.abused) AS deployer_abusers
    FROM deployer_firsts AS d CROSS JOIN as_of AS a
    GROUP BY d.chain_id
)
SELECT
    c.slug,
    c.display_name,
    c.address_format AS native_address_format,
    c.explorer_url,
    c.chain_id,
    p.latest_block,
    p.head_block,
    p.block_lag_seconds,
    COALESCE(pc.pairs, 0) AS pairs,
    COALESCE(pc.txns_24h, 0) AS txns_24h,
    COALESCE(pc.new_pairs_24h, 0) AS new_pairs_24h,
    COALESCE(pc.new_pairs_24h_total, 0) AS new_pairs_24h_total,
    COALESCE(pc.scams_total, 0) AS scams_total,
    COALESCE(pc.scams_on_pool, 0) AS scams_on_pool,
    COALESCE(pc.scams_inherited, 0) AS scams_inherited,
    COALESCE(pc.scams_24h, 0) AS scams_24h,
    COALESCE(d.deployers_total, 0) AS deployers_total,
    COALESCE(d.new_deployers_24h, 0) AS new_deployers_24h,
    COALESCE(d.deployer_abusers, 0) AS deployer_abusers,
    p.syncing,
    NOT p.syncing OR p.block_lag_seconds > {{ stale_lag_seconds }} AS metrics_stale,
    v.protocols,
    dn.dex_names,
    COALESCE(pc.liquidity_usd, 0.0) AS liquidity_usd,
    COALESCE(pc.volume_24h_usd, 0.0) AS volume_24h_usd,
    c.min_liquidity_usd,
    COALESCE(pc.quality_liquidity_usd, 0.0) AS quality_liquidity_usd,
    g.pair AS gainer_pair_address,
    g.ticker AS gainer_ticker,
    g.price_change_24h AS gainer_value,
    l.pair AS loser_pair_address,
    l.ticker AS loser_ticker,
    l.price_change_24h AS loser_value
FROM chains AS c
JOIN progress AS p ON c.chain_id = p.chain_id
LEFT JOIN pair_counts AS pc ON c.chain_id = pc.chain_id
LEFT JOIN venue_names AS v ON c.chain_id = v.chain_id
LEFT JOIN dex_names AS dn ON c.chain_id = dn.chain_id
LEFT JOIN deployers AS d ON c.chain_id = d.chain_id
LEFT JOIN movers AS g ON c.chain_id = g.chain_id AND g.up = 1
LEFT JOIN movers AS l ON c.chain_id = l.chain_id AND l.down = 1
ORDER BY c.chain_id
