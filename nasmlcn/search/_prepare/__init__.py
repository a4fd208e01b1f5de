"""From a configuration to an open study: everything checked up front (``setup``),
study recipes and their sweeps (``recipe``), the study created or loaded and its
identity checked, warm start included (``open_study``, ``warm``), and what a library
call adds around a run (``entry``)."""
