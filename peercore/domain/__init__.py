"""The leaf layer: the canonical judgment table's encoded form (the read model), selections and options.

Nothing here imports storage, the application layer or the dashboard.
"""
