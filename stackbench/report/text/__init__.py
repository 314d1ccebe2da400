"""Reports for a terminal: they render what analysis/ computed, and compute nothing."""
