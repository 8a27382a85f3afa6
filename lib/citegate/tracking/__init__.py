"""citegate.tracking."""
