"""citegate.corpus."""
