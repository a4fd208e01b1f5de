"""What a trial is scored on, and in which direction (``--objectives``): ``OBJECTIVES``,
each added with :func:`register_objective` where its value is defined (the built-in
ones: ``_builtin``); an objective's type and what counts as learning are ``_base``."""

from nasmlcn.search.objectives._base import OBJECTIVES as OBJECTIVES
from nasmlcn.search.objectives._base import Objective as Objective
from nasmlcn.search.objectives._base import chance_accuracy as chance_accuracy
from nasmlcn.search.objectives._base import learning_constraint as learning_constraint
from nasmlcn.search.objectives._base import learning_threshold as learning_threshold
from nasmlcn.search.objectives._base import register_objective as register_objective
from nasmlcn.search.objectives._builtin import accuracy as accuracy
from nasmlcn.search.objectives._builtin import energy as energy
from nasmlcn.search.objectives._builtin import inference as inference
from nasmlcn.search.objectives._builtin import latency as latency
from nasmlcn.search.objectives._builtin import memory as memory
from nasmlcn.search.objectives._builtin import params as params
