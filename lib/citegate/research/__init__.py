"""citegate.research."""
