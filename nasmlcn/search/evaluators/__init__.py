"""How a candidate's accuracy is obtained (``--evaluator``): real training
(``_train``) and the analytic stand-in (``_proxy``), each registered in ``EVALUATORS``
with :func:`register_evaluator` where it is defined; the protocol they follow, what
they take and give, is ``_base``."""

from nasmlcn.search.evaluators._base import EVALUATORS as EVALUATORS
from nasmlcn.search.evaluators._base import Evaluator as Evaluator
from nasmlcn.search.evaluators._base import register_evaluator as register_evaluator
from nasmlcn.search.evaluators._proxy import ProxyEvaluator as ProxyEvaluator
from nasmlcn.search.evaluators._train import TrainEvaluator as TrainEvaluator
