"""Presentation: everything here reads stored results (or runner events) and prints."""
