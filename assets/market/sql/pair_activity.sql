-- name: pair_activity
-- grain: one row per pair with at least one swap in the longest window (chain_id, pair)
-- description: Each pair's window block for every pair window ending at the lake's watermark: swaps, buys and sells, their USD volume, and the distinct wallets that bought and sold.
{% from "macros.jinja" import windowed_legs, activity with context %}
WITH {{ windowed_legs(windows) }},
{{ activity(windows, "pair") }}
