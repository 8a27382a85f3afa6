"""Notebook 07: curated memory, the pre-check and the lean path."""
