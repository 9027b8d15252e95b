"""Small runnable programs using pushcore (run each as a script: python examples/x.py)."""
