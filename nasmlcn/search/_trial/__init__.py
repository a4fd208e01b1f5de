"""One trial's life from its parameters to Optuna's tell (``run``): repeats of a model
already trained (``repeats``), the objectives and whether it learned
(``objectives``)."""
