"""Embedding providers for memindex (filled in by the providers work)."""
