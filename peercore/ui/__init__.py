"""The dashboard's glue: the only part of peercore that may import streamlit.

- :mod:`peercore.ui.state`: session-state keys and their defaults (defined once).
- :mod:`peercore.ui.data`: the store per process, first-run seeding, cached loaders
  keyed on the study's revision stamp.
- :mod:`peercore.ui.runs`, :mod:`peercore.ui.imports`, :mod:`peercore.ui.safe`: run, upload and
  rendering glue. What a page computes comes from :mod:`peercore.app` (the application
  layer the CLI shares) and :mod:`peercore.reports` (pure tables for display).
- ``peercore app`` (the command that opens the dashboard) is :mod:`peercore.cli.dashboard`.

Importing this package does not import streamlit; the submodules that need it do.
"""
