"""Clients that are not on localhost: the lab's own network namespaces (server in one,
the load engine in another), the links between them and how they are shaped, and what
each link was measured to do."""
