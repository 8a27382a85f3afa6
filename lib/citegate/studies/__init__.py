"""citegate.studies."""
