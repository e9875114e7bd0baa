"""pytest plugin for kg-rageval (filled in by the integrations work)."""
