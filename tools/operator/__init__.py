"""The operator's views of a running daemon: the status page (``status_page``) and the Foxglove
bridge (``foxglove_bridge``). Both talk to the daemon only through
:class:`robodyn.daemon.readonly.ReadOnlyClient`, so neither can move the robot."""
