"""Shared core: data contracts, settings, downloads, the Multi-Bootstrap, code dependencies."""
