-- name: pair_tokens
-- grain: one row per pair (chain_id, pair)
-- description: Each pair with its base and quote token, their decimals, the quote's price feed (its own, or derived through its pools) and the venue that owns the factory.
WITH t AS (
    SELECT chain_id, address, symbol, decimals, is_quote, price_feed_id, status, honeypot_test,
           deployer,
           CASE WHEN is_quote THEN 2 WHEN price_feed_id IS NOT NULL THEN 1 ELSE 0 END AS quote_rank
    FROM tokens
),
oriented AS (
    SELECT
        p.chain_id,
        p.address AS pair,
        p.factory,
        p.created_at,
        p.creator,
        p.is_perp,
        p.launchpad,
        p.fee_bps,
        -- The quote is the side priced more directly: a quote token by its own feed, then a
        -- token priced through its pools (a derived feed), then neither.
        CASE WHEN t1.quote_rank >= t0.quote_rank THEN TRUE ELSE FALSE END AS base_is_token0,
        t0.address AS a0, t1.address AS a1,
        t0.symbol AS s0, t1.symbol AS s1,
        t0.decimals AS d0, t1.decimals AS d1,
        t0.price_feed_id AS f0, t1.price_feed_id AS f1,
        t0.status AS st0, t1.status AS st1,
        t0.honeypot_test AS h0, t1.honeypot_test AS h1
    FROM pairs AS p
    JOIN t AS t0 ON p.chain_id = t0.chain_id AND p.token0 = t0.address
    JOIN t AS t1 ON p.chain_id = t1.chain_id AND p.token1 = t1.address
)
SELECT
    o.chain_id,
    o.pair,
    o.factory,
    o.created_at,
    o.creator,
    o.is_perp,
    o.launchpad,
    o.fee_bps,
    o.base_is_token0,
    CASE WHEN o.base_is_token0 THEN o.a0 ELSE o.a1 END AS base,
    CASE WHEN o.base_is_token0 THEN o.a1 ELSE o.a0 END AS quote,
    CASE WHEN o.base_is_token0 THEN o.s0 || '/' || o.s1 ELSE o.s1 || '/' || o.s0 END AS ticker,
    CASE WHEN o.base_is_token0 THEN o.d0 ELSE o.d1 END AS base_decimals,
    CASE WHEN o.base_is_token0 THEN o.d1 ELSE o.d0 END AS quote_decimals,
    CASE WHEN o.base_is_token0 THEN o.f1 ELSE o.f0 END AS quote_feed_id,
    CASE WHEN o.base_is_token0 THEN o.st0 ELSE o.st1 END AS base_status,
    CASE WHEN o.base_is_token0 THEN o.h0 ELSE o.h1 END AS base_honeypot_test,
    v.venue_id,
    v.name AS venue_name,
    v.category AS venue_category
FROM oriented AS o
LEFT JOIN venues AS v ON o.chain_id = v.chain_id AND o.factory = v.factory
