"""``python -m bigdr.cli``: the same as the ``bigdr`` command."""

from .main import run

run()
