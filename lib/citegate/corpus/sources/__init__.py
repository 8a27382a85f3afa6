"""Readers that turn the project's data files into `Fragment`s, one module per source."""

from __future__ import annotations
