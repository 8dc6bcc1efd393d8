-- name: pair_activity
-- grain: one row per pair with at least one swap in the longest window (chain_id, pair)
-- description: Each pair's window block for every pair window ending at the lake's watermark: swaps, buys and sells, their USD volume, and the distinct wallets that bought and sold.
{% from "macros.jinja" import clock, window_flags, in_longest_window, activity with context %}
WITH windowed AS (
    SELECT
        s.chain_id,
        s.pair,
        s.maker_key AS maker,
        s.side,
        COALESCE(s.volume_usd, 0.0) AS usd,
{{- window_flags(windows, "s") }}
    FROM swap_legs AS s
{{- clock() }}
    WHERE {{ in_longest_window(windows, "s") }}
),
{{ activity(windows, "pair") }}
