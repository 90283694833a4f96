"""The viewer outside the server: the one-file page, the notebook widget, exports and animation."""
