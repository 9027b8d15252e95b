"""pushctl: the command-line front door onto pushcore's services.

The Typer application lives in :mod:`pushcore_cli.main`; this package stays
empty on purpose so that ``python -m pushcore_cli.main`` does not import the
module twice.
"""
