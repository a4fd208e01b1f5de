"""Stopping weak trials after an epoch: the registry (``pruners``), correlation-gated
pruning, the default (``correlation``), and successive halving (``halving``)."""
