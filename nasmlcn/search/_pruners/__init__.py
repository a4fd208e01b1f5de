"""The rules that stop weak trials after an epoch: correlation-gated pruning, the
default (``correlation``), and successive halving (``halving``); by name: ``PRUNERS``
(``_registries.pruners``)."""
