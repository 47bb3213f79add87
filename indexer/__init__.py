"""memindex: keeps an AI agent's Markdown memory searchable."""

__all__ = ["__version__"]

__version__ = "0.2.0"
