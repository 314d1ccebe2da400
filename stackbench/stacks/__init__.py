"""Stacks: families of real servers (see base.py for the contract, registry.py for the table)."""
