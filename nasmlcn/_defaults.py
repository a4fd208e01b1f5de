"""Defaults that more than one layer reads, written once (pure Python, no torch)."""

from __future__ import annotations

LEARNING_RATE = 1e-3
"""Initial Adam learning rate (the thesis's, and every reproduction recipe's)."""
