-- name: wallet_windows
-- grain: one row per wallet and window with a swap or a transfer in it (chain_id, wallet, window)
-- description: Each wallet's metrics record per window (spec 2.4): realised, unrealised, total and rated PNL, gross profit and loss, invested, volume, ROI, win rate with the rated-sample rule, trade win rate, median ROI, profit factor, average trade and hold, trade and position counts, and the three exclusion counts.
{#- A position counts in a window when it swapped there. It is rated when it is tracked (some
    swap had a USD price) and a sell gave it an outcome; bought-only ones have no outcome yet.
    Unrealised profit is the position's open holding marked now. #}
WITH per_position AS (
{%- for window in wallet_windows %}
    SELECT
        w.chain_id, w.wallet, '{{ window }}' AS "window",
        w.swaps_{{ window }} AS swaps,
        w.transfers_{{ window }} AS transfers,
        w.invested_{{ window }} AS invested,
        w.volume_{{ window }} AS volume,
        CASE WHEN p.tracked THEN w.realized_{{ window }} ELSE 0.0 END AS realized,
        CASE WHEN p.tracked THEN w.cost_closed_{{ window }} ELSE 0.0 END AS cost_closed,
        CASE WHEN w.swaps_{{ window }} > 0 THEN COALESCE(p.unrealized_usd, 0.0) ELSE 0.0 END AS unrealized,
        CASE WHEN p.tracked THEN w.gross_profit_{{ window }} ELSE 0.0 END AS gross_profit,
        CASE WHEN p.tracked THEN w.gross_loss_{{ window }} ELSE 0.0 END AS gross_loss,
        CASE WHEN p.tracked THEN w.winning_{{ window }} ELSE 0 END AS winning,
        CASE WHEN p.tracked THEN w.losing_{{ window }} ELSE 0 END AS losing,
        w.closed_rounds_{{ window }} AS closed_rounds,
        w.held_for_{{ window }} AS held_for,
        COALESCE(p.is_open, FALSE) AS is_open,
        w.swaps_{{ window }} > 0 AND COALESCE(p.tracked, FALSE) AND w.sells_{{ window }} > 0 AS rated,
        w.swaps_{{ window }} > 0 AND COALESCE(p.tracked, FALSE) AND w.sells_{{ window }} = 0 AS no_outcome,
        w.swaps_{{ window }} > 0 AND NOT COALESCE(p.tracked, FALSE) AS untracked,
        w.swaps_{{ window }} = 0 AND w.transfers_{{ window }} > 0 AS transfer_only
    FROM wallet_position_windows AS w
    LEFT JOIN wallet_positions AS p
        ON w.chain_id = p.chain_id AND w.wallet = p.wallet AND w.token = p.token
    WHERE w.swaps_{{ window }} + w.transfers_{{ window }} > 0
    {{ "UNION ALL" if not loop.last }}
{%- endfor %}
),
rated AS (
    SELECT *,
           CASE WHEN rated AND cost_closed > 0 THEN realized / cost_closed END AS position_roi
    FROM per_position
),
summed AS (
    SELECT
        chain_id, wallet, "window",
        SUM(realized) AS realized_pnl_usd,
        SUM(unrealized) AS unrealized_pnl_usd,
        SUM(CASE WHEN rated THEN realized + unrealized ELSE 0.0 END) AS rated_pnl_usd,
        SUM(gross_profit) AS gross_profit_usd,
        SUM(gross_loss) AS gross_loss_usd,
        SUM(invested) AS invested_usd,
        SUM(volume) AS volume_usd,
        SUM(cost_closed) AS cost_closed_usd,
        SUM(swaps) AS trades,
        SUM(winning) AS winning_trades,
        SUM(losing) AS losing_trades,
        SUM(CASE WHEN swaps > 0 THEN 1 ELSE 0 END) AS tokens_traded,
        SUM(CASE WHEN swaps > 0 AND NOT is_open THEN 1 ELSE 0 END) AS closed_positions,
        SUM(CASE WHEN swaps > 0 AND is_open THEN 1 ELSE 0 END) AS open_positions,
        SUM(CASE WHEN rated THEN 1 ELSE 0 END) AS rated_positions,
        SUM(CASE WHEN rated AND realized > 0 THEN 1 ELSE 0 END) AS winning_positions,
        SUM(CASE WHEN transfer_only THEN 1 ELSE 0 END) AS excluded_transfer_only,
        SUM(CASE WHEN untracked THEN 1 ELSE 0 END) AS excluded_untracked,
        SUM(CASE WHEN no_outcome THEN 1 ELSE 0 END) AS excluded_no_outcome,
        MEDIAN(position_roi) AS median_roi,
        SUM(closed_rounds) AS closed_rounds,
        SUM(held_for) AS held_for
    FROM rated
    GROUP BY chain_id, wallet, "window"
)
SELECT
    chain_id, wallet, "window",
    realized_pnl_usd,
    unrealized_pnl_usd,
    realized_pnl_usd + unrealized_pnl_usd AS total_pnl_usd,
    rated_pnl_usd,
    gross_profit_usd,
    gross_loss_usd,
    invested_usd,
    volume_usd,
    cost_closed_usd,
    CASE WHEN cost_closed_usd > 0 THEN realized_pnl_usd / cost_closed_usd ELSE 0.0 END AS roi,
    CASE WHEN rated_positions >= {{ min_rated_positions }}
         THEN CAST(winning_positions AS DOUBLE) / rated_positions ELSE 0.0 END AS win_rate,
    CASE WHEN winning_trades + losing_trades > 0
         THEN CAST(winning_trades AS DOUBLE) / (winning_trades + losing_trades) ELSE 0.0 END
        AS trade_win_rate,
    COALESCE(median_roi, 0.0) AS median_roi,
    CASE WHEN gross_loss_usd > 0 THEN gross_profit_usd / gross_loss_usd END AS profit_factor,
    CASE WHEN trades > 0 THEN volume_usd / trades ELSE 0.0 END AS avg_trade_usd,
    CASE WHEN closed_rounds > 0 THEN held_for / closed_rounds ELSE 0 END AS avg_hold_seconds,
    trades,
    winning_trades,
    losing_trades,
    tokens_traded,
    closed_positions,
    open_positions,
    rated_positions,
    winning_positions,
    excluded_transfer_only,
    excluded_untracked,
    excluded_no_outcome
FROM summed
