"""The ``bigdr`` command line: :mod:`~bigdr.cli.main` (the commands), :mod:`~bigdr.cli.args`
(the parser, built from the estimators' signatures) and :mod:`~bigdr.cli.info` (``bigdr info``)."""

from .main import main, run

__all__ = ["main", "run"]
