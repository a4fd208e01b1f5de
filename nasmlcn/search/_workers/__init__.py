"""Many worker processes on one study, on this machine (``pool``)."""
