"""Notebook 06, answer faithfulness: the claim validator on a labeled claim set, each composer's
answers through the claim check, and the blind pairwise judge."""
