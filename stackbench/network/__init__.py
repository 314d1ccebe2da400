"""Network emulation between the lab's namespaces."""
