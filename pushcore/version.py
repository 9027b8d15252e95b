"""The release's version, in a module of its own so that any layer can read it
without importing the package face (``pushcore/__init__.py``) and all it loads."""

__version__ = "0.1.0"
