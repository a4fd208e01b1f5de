"""NASCaps' second stage, after the search: the chosen trials trained again, fully,
and tested (``plan``: which trials and as what training jobs, all checked before
anything trains; ``run``: training them and storing what they reached)."""
