"""citegate.models."""
