"""Servers: one process tree each — nginx, Apache, PHP-FPM, Varnish, lighttpd, h2o,
Caddy, Jetty — with its config template (templates/), its checker and start command, under one
contract (base.py). Stack families (stacks/) are composed of them; a workload's services
are servers too (MariaDB, workloads/mariadb.py), which is why this room sits below both."""
