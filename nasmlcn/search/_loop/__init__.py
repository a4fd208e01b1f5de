"""The run: propose a trial, run it, tell the observers (``runner``)."""
