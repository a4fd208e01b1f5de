"""After the search: what a study sums up to (``summary``: its answer, counts,
correlations), a trial's files for ``best --export`` (``export``), and NASCaps' second
stage, the chosen trials trained again, fully, and tested (``retrain_plan``: which
trials and as what training jobs, all checked before anything trains; ``retrain``:
training them and storing what they reached)."""
