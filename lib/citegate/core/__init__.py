"""citegate.core."""
