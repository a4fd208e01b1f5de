"""How a candidate's accuracy is obtained: the protocol (``evaluator``), real training
(``train``) and the analytic stand-in (``proxy``)."""
