"""How a candidate's accuracy is obtained (the protocol: ``_types.evaluation``): real
training (``train``) and the analytic stand-in (``proxy``)."""
