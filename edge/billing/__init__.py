"""What a call costs and who pays: keys, plans, metering, x402 payments and admission."""
