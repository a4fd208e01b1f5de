"""Samplers by name (``--sampler``): ``SAMPLERS``, each added with
:func:`register_sampler` where it is defined; Optuna's own, seeded (``_optuna``)."""

from nasmlcn.search.samplers._base import SAMPLERS as SAMPLERS
from nasmlcn.search.samplers._base import SamplerEntry as SamplerEntry
from nasmlcn.search.samplers._base import register_sampler as register_sampler
from nasmlcn.search.samplers._base import suggest_all as suggest_all
from nasmlcn.search.samplers._optuna import gp_sampler as gp_sampler
from nasmlcn.search.samplers._optuna import nsga2_sampler as nsga2_sampler
from nasmlcn.search.samplers._optuna import random_sampler as random_sampler
from nasmlcn.search.samplers._optuna import tpe_sampler as tpe_sampler
