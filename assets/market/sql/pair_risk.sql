-- name: pair_risk
-- grain: one row per pair (chain_id, pair)
-- description: Scam evidence per pair: rugged on its own pool (the creator pulled most liquidity) or inherited from a condemned or honeypot base token.
WITH minted AS (
    SELECT chain_id, pair, SUM(CAST(liquidity AS DOUBLE)) AS minted
    FROM liquidity_events
    WHERE kind = 'mint'
    GROUP BY chain_id, pair
),
pulled AS (
    SELECT l.chain_id, l.pair, SUM(CAST(l.liquidity AS DOUBLE)) AS pulled
    FROM liquidity_events AS l
    JOIN pair_tokens AS pt ON l.chain_id = pt.chain_id AND l.pair = pt.pair AND l.owner = pt.creator
    WHERE l.kind = 'burn'
    GROUP BY l.chain_id, l.pair
),
flags AS (
    SELECT
        pt.chain_id,
        pt.pair,
        COALESCE(pu.pulled / m.minted, 0.0) >= {{ rug_pulled_share }} AS rugged,
        pt.base_status IN ({{ terminal_statuses | join(', ') }}) AS condemned,
        pt.base_honeypot_test = 'fail' AS honeypot
    FROM pair_tokens AS pt
    LEFT JOIN minted AS m ON pt.chain_id = m.chain_id AND pt.pair = m.pair
    LEFT JOIN pulled AS pu ON pt.chain_id = pu.chain_id AND pt.pair = pu.pair
)
SELECT
    chain_id,
    pair,
    rugged,
    condemned,
    honeypot,
    rugged AS scam_on_pool,
    NOT rugged AND (condemned OR honeypot) AS scam_inherited,
    rugged OR condemned OR honeypot AS is_scam
FROM flags
