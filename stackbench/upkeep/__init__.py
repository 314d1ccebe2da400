"""The lab's upkeep of the machine: what it owns and the sweep of what a killed lab left
(leftovers.py), child processes and their groups (supervise.py), one measuring lab at a
time (lock.py), the environment it records (environment.py), cores for the stack and the
engine (pinning.py), free ports (ports.py) and its own programs (binaries.py)."""
