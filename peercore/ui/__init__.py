"""The dashboard's glue: the only part of peercore that may import streamlit.

- :mod:`peercore.ui.state`: session-state keys and their defaults (defined once).
- :mod:`peercore.ui.data`: the store per process, first-run seeding, cached loaders
  keyed on the study's revision stamp.
- :mod:`peercore.ui.views`: pure DataFrame assembly for the pages (no streamlit).
- :mod:`peercore.ui.commands`: the ``peercore app`` command.

Importing this package does not import streamlit; the submodules that need it do.
"""
