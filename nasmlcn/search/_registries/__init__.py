"""The search's registries, side by side: ``SAMPLERS`` (``samplers``), ``EVALUATORS``
(``evaluators``), ``OBJECTIVES`` (``objectives``) and ``PRUNERS`` (``pruners``)."""

from nasmlcn.search._registries import evaluators, objectives, pruners, samplers
