"""The project's measurement tools, an app of their own (see apps.py)."""
