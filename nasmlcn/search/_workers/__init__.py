"""Many worker processes on one study, on this machine: starting them and relaying
their trials (``pool``), each one's GPUs and CPU threads (``shares``), Ctrl-C and
SIGTERM across them (``signals``)."""
