"""Planning: what a plan file asks, checked before anything starts — the plan and its
cells (plan.py), the load models (loads.py), machine profiles (machine.py), what the
machine allows (limits.py), where load may go (target.py) and where the lab's parts run
(hosts.py: the [hosts] table, which hosts/ then connects)."""
