-- name: wallet_windows
-- grain: one row per wallet and window with a swap or a transfer in it (chain_id, wallet, window)
-- description: Each wallet's metrics record per window (spec 2.4): realised, unrealised, total and rated PNL, gross profit and loss, invested, volume, ROI, win rate with the rated-sample rule, trade win rate, median ROI, profit factor, average trade and hold, trade and position counts, and the three exclusion counts.
{#- A position counts in a window when it swapped there. It is rated when it is tracked (some
    swap had a USD price) and a sell gave it an outcome; bought-only ones have no outcome yet.
    Unrealised profit is the position's open holding marked now.
    Each wallet is summed once, every window side by side (one row per position in, one per
    wallet out), and the windows are then laid one under the other: a position with nothing in
    a window adds zero to it, and a wallet with nothing in it has no row. A position's windows
    find its lifetime row by its fingerprint (`position`), one integer, not three strings. #}
{%- set windows = wallet_windows | list %}
WITH positions AS (
    SELECT
        w.*,
        COALESCE(p.tracked, FALSE) AS tracked,
        COALESCE(p.is_open, FALSE) AS is_open,
        COALESCE(p.unrealized_usd, 0.0) AS open_pnl
    FROM wallet_position_windows AS w
    LEFT JOIN wallet_positions AS p
        ON w.position = p.position
),
per_position AS (
    SELECT
        chain_id, wallet, is_open,
{%- for w in windows %}
        swaps_{{ w }}, transfers_{{ w }}, invested_{{ w }}, volume_{{ w }},
        closed_rounds_{{ w }}, held_for_{{ w }},
        CASE WHEN tracked THEN realized_{{ w }} ELSE 0.0 END AS realized_{{ w }},
        CASE WHEN tracked THEN cost_closed_{{ w }} ELSE 0.0 END AS cost_closed_{{ w }},
        CASE WHEN swaps_{{ w }} > 0 THEN open_pnl ELSE 0.0 END AS unrealized_{{ w }},
        CASE WHEN tracked THEN gross_profit_{{ w }} ELSE 0.0 END AS gross_profit_{{ w }},
        CASE WHEN tracked THEN gross_loss_{{ w }} ELSE 0.0 END AS gross_loss_{{ w }},
        CASE WHEN tracked THEN winning_{{ w }} ELSE 0 END AS winning_{{ w }},
        CASE WHEN tracked THEN losing_{{ w }} ELSE 0 END AS losing_{{ w }},
        swaps_{{ w }} > 0 AND tracked AND sells_{{ w }} > 0 AS rated_{{ w }},
        swaps_{{ w }} > 0 AND tracked AND sells_{{ w }} = 0 AS no_outcome_{{ w }},
        swaps_{{ w }} > 0 AND NOT tracked AS untracked_{{ w }},
        swaps_{{ w }} = 0 AND transfers_{{ w }} > 0 AS transfer_only_{{ w }}{{ "," if not loop.last }}
{%- endfor %}
    FROM positions
),
summed AS (
    SELECT
        chain_id, wallet,
{%- for w in windows %}
        SUM(swaps_{{ w }} + transfers_{{ w }}) AS active_{{ w }},
        SUM(realized_{{ w }}) AS realized_pnl_usd_{{ w }},
        SUM(unrealized_{{ w }}) AS unrealized_pnl_usd_{{ w }},
        SUM(CASE WHEN rated_{{ w }} THEN realized_{{ w }} + unrealized_{{ w }} ELSE 0.0 END) AS rated_pnl_usd_{{ w }},
        SUM(gross_profit_{{ w }}) AS gross_profit_usd_{{ w }},
        SUM(gross_loss_{{ w }}) AS gross_loss_usd_{{ w }},
        SUM(invested_{{ w }}) AS invested_usd_{{ w }},
        SUM(volume_{{ w }}) AS volume_usd_{{ w }},
        SUM(cost_closed_{{ w }}) AS cost_closed_usd_{{ w }},
        SUM(swaps_{{ w }}) AS trades_{{ w }},
        SUM(winning_{{ w }}) AS winning_trades_{{ w }},
        SUM(losing_{{ w }}) AS losing_trades_{{ w }},
        SUM(CASE WHEN swaps_{{ w }} > 0 THEN 1 ELSE 0 END) AS tokens_traded_{{ w }},
        SUM(CASE WHEN swaps_{{ w }} > 0 AND NOT is_open THEN 1 ELSE 0 END) AS closed_positions_{{ w }},
        SUM(CASE WHEN swaps_{{ w }} > 0 AND is_open THEN 1 ELSE 0 END) AS open_positions_{{ w }},
        SUM(CASE WHEN rated_{{ w }} THEN 1 ELSE 0 END) AS rated_positions_{{ w }},
        SUM(CASE WHEN rated_{{ w }} AND realized_{{ w }} > 0 THEN 1 ELSE 0 END) AS winning_positions_{{ w }},
        SUM(CASE WHEN transfer_only_{{ w }} THEN 1 ELSE 0 END) AS excluded_transfer_only_{{ w }},
        SUM(CASE WHEN untracked_{{ w }} THEN 1 ELSE 0 END) AS excluded_untracked_{{ w }},
        SUM(CASE WHEN no_outcome_{{ w }} THEN 1 ELSE 0 END) AS excluded_no_outcome_{{ w }},
        MEDIAN(CASE WHEN rated_{{ w }} AND cost_closed_{{ w }} > 0
                    THEN realized_{{ w }} / cost_closed_{{ w }} END) AS median_roi_{{ w }},
        SUM(closed_rounds_{{ w }}) AS closed_rounds_{{ w }},
        SUM(held_for_{{ w }}) AS held_for_{{ w }}{{ "," if not loop.last }}
{%- endfor %}
    FROM per_position
    GROUP BY chain_id, wallet
)
{%- set sums = ("rated_pnl_usd", "gross_profit_usd", "gross_loss_usd", "invested_usd",
                "volume_usd", "cost_closed_usd") %}
{%- set counts = ("trades", "winning_trades", "losing_trades", "tokens_traded",
                  "closed_positions", "open_positions", "rated_positions", "winning_positions",
                  "excluded_transfer_only", "excluded_untracked", "excluded_no_outcome") %}
{%- for w in windows %}
SELECT
    chain_id, wallet, '{{ w }}' AS "window",
    realized_pnl_usd_{{ w }} AS realized_pnl_usd,
    unrealized_pnl_usd_{{ w }} AS unrealized_pnl_usd,
    realized_pnl_usd_{{ w }} + unrealized_pnl_usd_{{ w }} AS total_pnl_usd,
{%- for figure in sums %}
    {{ figure }}_{{ w }} AS {{ figure }},
{%- endfor %}
    CASE WHEN cost_closed_usd_{{ w }} > 0 THEN realized_pnl_usd_{{ w }} / cost_closed_usd_{{ w }} ELSE 0.0 END AS roi,
    CASE WHEN rated_positions_{{ w }} >= {{ min_rated_positions }}
         THEN CAST(winning_positions_{{ w }} AS DOUBLE) / rated_positions_{{ w }} ELSE 0.0 END AS win_rate,
    CASE WHEN winning_trades_{{ w }} + losing_trades_{{ w }} > 0
         THEN CAST(winning_trades_{{ w }} AS DOUBLE) / (winning_trades_{{ w }} + losing_trades_{{ w }})
         ELSE 0.0 END AS trade_win_rate,
    COALESCE(median_roi_{{ w }}, 0.0) AS median_roi,
    CASE WHEN gross_loss_usd_{{ w }} > 0 THEN gross_profit_usd_{{ w }} / gross_loss_usd_{{ w }} END AS profit_factor,
    CASE WHEN trades_{{ w }} > 0 THEN volume_usd_{{ w }} / trades_{{ w }} ELSE 0.0 END AS avg_trade_usd,
    CASE WHEN closed_rounds_{{ w }} > 0 THEN held_for_{{ w }} / closed_rounds_{{ w }} ELSE 0 END AS avg_hold_seconds
{%- for figure in counts %},
    {{ figure }}_{{ w }} AS {{ figure }}
{%- endfor %}
FROM summed
WHERE active_{{ w }} > 0
{{- " UNION ALL" if not loop.last }}
{%- endfor %}
