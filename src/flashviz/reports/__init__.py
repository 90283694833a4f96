"""Closed forms side by side, no engine run: compare, regimes, the ladder's table, the ring's model."""
