"""Notebook 08: the whole turn measured end to end, and the certified floor of the pointers."""
