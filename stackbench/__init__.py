"""stackbench: compare PHP web stacks on real servers, with evidence."""

__version__ = "0.1.0"
