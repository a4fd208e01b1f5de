"""The rules that stop weak trials after an epoch (``--pruner``): correlation-gated
pruning, the default (``_correlation``), and successive halving (``_halving``), each
registered in ``PRUNERS`` with :func:`register_pruner` where it is defined; their
protocol and what they compare a trial with are in ``_base``."""

from nasmlcn.search.pruners._base import PRUNERS as PRUNERS
from nasmlcn.search.pruners._base import EpochPruner as EpochPruner
from nasmlcn.search.pruners._base import register_pruner as register_pruner
from nasmlcn.search.pruners._correlation import CorrelationPruner as CorrelationPruner
from nasmlcn.search.pruners._correlation import correlation_pruner as correlation_pruner
from nasmlcn.search.pruners._correlation import replay_pruning as replay_pruning
from nasmlcn.search.pruners._halving import HalvingPruner as HalvingPruner
from nasmlcn.search.pruners._halving import halving_pruner as halving_pruner
