"""Where the lab's parts run: the load's clients on this machine, in a namespace of the
lab's, or on other hosts reached over SSH (the plan's [hosts] table is planning/hosts.py;
ssh.py: the connection; clock.py: a remote clock's offset; clients.py: one load over them all)."""
