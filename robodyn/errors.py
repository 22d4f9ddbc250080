"""The errors every layer may raise, at the bottom of the import graph.

A :class:`UserError` carries a message that tells the user what to fix; the command line prints it
as one line (``error: …``) and exits 2, never with a traceback. Library code raises it for bad input
it can name (a field and its limit); it never imports the command line to do so.
"""

from __future__ import annotations


class UserError(Exception):
    """An error whose message tells the user what to fix; printed without a traceback."""
