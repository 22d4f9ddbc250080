"""Loaders that turn published raw robot data sets into joint-space identification data."""
