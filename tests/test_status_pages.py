"""Parsing the servers' status pages (unit; the texts are what the servers print)."""

from stackbench.monitor.status_pages import parse_apache, parse_fpm, parse_nginx

NGINX = """Active connections: 65
server accepts handled requests
 1204 1204 98211
Reading: 0 Writing: 12 Waiting: 53
"""

APACHE = """127.0.0.1
ServerVersion: Apache/2.4.71 (Debian)
ServerMPM: prefork
Total Accesses: 5123
Total kBytes: 80
Uptime: 3
ReqPerSec: 1707.67
BusyWorkers: 17
IdleWorkers: 3
Processes: 20
Scoreboard: WWWW_____
"""

FPM = """pool:                 www
process manager:      dynamic
start time:           22/Nov/2026:13:50:01 +0000
accepted conn:        4242
listen queue:         3
max listen queue:     12
listen queue len:     511
idle processes:       0
active processes:     5
total processes:      5
max active processes: 5
max children reached: 1
slow requests:        0
"""


def test_nginx():
    assert parse_nginx(NGINX) == {"active_connections": 65, "accepts": 1204, "handled": 1204, "requests": 98211,
                                  "reading": 0, "writing": 12, "waiting": 53}


def test_apache():
    assert parse_apache(APACHE) == {"total_accesses": 5123, "busy_workers": 17, "idle_workers": 3, "processes": 20}


def test_fpm():
    v = parse_fpm(FPM)
    assert v["accepted_connections"] == 4242 and v["listen_queue"] == 3 and v["max_listen_queue"] == 12
    assert v["active_processes"] == 5 and v["max_children_reached"] == 1 and "listen_queue_len" not in v


def test_garbage_gives_nothing():
    assert parse_nginx("<html>404</html>") == {} and parse_apache("") == {} and parse_fpm("x: y") == {}


def test_busy_max_is_each_servers_most_busy_workers_from_its_own_page():
    from stackbench.monitor.status_pages import StatusSample, busy_max
    samples = [StatusSample(1, "apache2", {"busy_workers": 11, "idle_workers": 4}),
               StatusSample(2, "apache2", {"busy_workers": 67, "idle_workers": 0}),
               StatusSample(2, "php-fpm", {"active_processes": 3}),
               StatusSample(3, "nginx", {"writing": 64, "waiting": 2}),
               StatusSample(4, "varnish", {"n_object": 9})]
    assert busy_max(samples) == {"apache2": 67, "php-fpm": 3, "nginx": 64}
    assert busy_max([]) == {}


def test_a_page_that_does_not_answer_is_counted_and_shown_as_no_answer():
    """Every prefork child held by a slow visitor: the status page cannot answer. That is
    recorded (not dropped), and the visitor-classes table says "no answer", not "–"."""
    import socket

    from stackbench.monitor.status_pages import StatusPoller, busy_max, unanswered
    from stackbench.analysis import cells as analyzed_cells, classes
    from stackbench.report.words import classes as classes_text
    from cells import stored_cell

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts into the backlog, never answers: fetch times out
    try:
        poller = StatusPoller({"apache2": ("apache", f"http://127.0.0.1:{silent.getsockname()[1]}/status?auto")},
                              interval_s=0.05)
        poller.start()
        samples = poller.stop()
    finally:
        silent.close()
    assert samples and busy_max(samples) == {} and unanswered(samples) == {"apache2": len(samples)}
    cell = stored_cell(stack_label="prefork", workload="php-100k", concurrency=8, keepalive=True, seq=0,
                       repetition=0, status="ok", network="veth", background="slow", requests_per_s=0.0,
                       latency_p99_us=None, procs_max=21, load="closed",
                       classes={"slow": {"completed": 0}, "server": {"busy_max": {}, "unanswered": {"apache2": 4}}})
    row = classes_text.rows(classes.of(analyzed_cells.of([cell])))[0]
    assert row[-2:] == ("no answer", "21")
