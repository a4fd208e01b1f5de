"""One trial's life from its parameters to Optuna's tell (``run``), with what the
run's trials share (``context``), the repeats of a model already trained
(``repeats``), the pruner's view of the trial (``pruning``), how a trial waits for
another worker (``waits``), and the study's replicate: its best model trained once
more with another seed, to measure the noise of one run (``replicate``)."""
