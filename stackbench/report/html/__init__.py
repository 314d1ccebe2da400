"""The HTML report: one self-contained file (inline CSS and SVG, no script library, no
network) rendered from what stackbench/analysis/ computes. page.py is the entry point."""
