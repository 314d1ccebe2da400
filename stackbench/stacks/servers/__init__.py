"""Server components (one process tree each) that stack families are composed of."""
