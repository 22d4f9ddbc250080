"""Jobs the daemon runs for its clients: extensions that join the daemon and an algorithm package.

:mod:`.identification`: the identification jobs `robodyn daemon` registers (``identify``, ``jobs``, ...).
"""
