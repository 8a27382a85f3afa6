"""citegate.evaluation."""
