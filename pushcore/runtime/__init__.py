"""What the process runs on: the real clock, ids and randomness (``system``), the
data directory and its file modes (``datadir``), and the garbage collector's
tuning for a long-running server (``heap``)."""
