"""citegate.pipeline."""
