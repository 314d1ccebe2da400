"""Reports render models built by stackbench.analysis from the store: text/ for a
terminal (tables, explain, timeline, progress). They format; they do not compute."""
