"""citegate.store."""
