"""Locust doing the visits of bench/visits-cost/run.py: the same journey, as a Locust user
would script it, for the CPU a request of the peer that scripts such journeys.

Run by run.py in a venv of its own (never the product's), one user class at a time:
- FastVisitor: FastHttpUser's client (geventhttpclient), Locust's fastest;
- HttpVisitor: HttpUser's client (requests).
Each visit is a new visitor, as in the engine's visits (loadgen/README.md, "Visits"): a new
session (an empty cookie jar, connections of its own, closed at the end of the visit); each
page, then its assets over up to 6 connections at once; no think time.

The environment gives the journey (VISITS_JOURNEY: a JSON list of [page, [assets]]), the
measured window in seconds (VISITS_WINDOW_S) and where to write its figures (VISITS_OUT).
The window opens when every user is spawned and lasts VISITS_WINDOW_S: the process's
user + system CPU (os.times) and the requests Locust completed (successes and failures)
are read at both ends, so neither the imports nor the ramp nor the stop count.
"""

import json
import os
import time

import gevent
import gevent.pool
from locust import FastHttpUser, HttpUser, events, task
from locust.clients import HttpSession
from locust.contrib.fasthttp import FastHttpSession

JOURNEY = json.loads(os.environ["VISITS_JOURNEY"])
WINDOW_S = float(os.environ["VISITS_WINDOW_S"])
OUT = os.environ["VISITS_OUT"]
PAGE_CONNS = 6  # the engine's --page-conns default: a browser's connections to one host


def walk(session):
    """The journey on one session: each page, then its assets on up to PAGE_CONNS greenlets."""
    pool = gevent.pool.Pool(PAGE_CONNS)
    for page, assets in JOURNEY:
        session.get(page)
        pool.map(session.get, assets)


class FastVisitor(FastHttpUser):
    @task
    def visit(self):
        session = FastHttpSession(base_url=self.host, request_event=self.environment.events.request, user=self,
                                  concurrency=PAGE_CONNS)
        try:
            walk(session)
        finally:
            session.client.close()


class HttpVisitor(HttpUser):
    @task
    def visit(self):
        session = HttpSession(base_url=self.host, request_event=self.environment.events.request, user=self)
        try:
            walk(session)
        finally:
            session.close()


def sample(environment):
    t = os.times()
    return {"cpu_s": t.user + t.system, "wall_s": time.monotonic(),
            "completed": environment.stats.total.num_requests, "failed": environment.stats.total.num_failures}


@events.spawning_complete.add_listener
def measure(user_count, **_):
    environment = measure.environment
    start = sample(environment)

    def close_window():
        gevent.sleep(WINDOW_S)
        end = sample(environment)
        doc = {k: end[k] - start[k] for k in start} | {"users": user_count}
        with open(OUT, "w") as f:
            json.dump(doc, f)

    gevent.spawn(close_window)


@events.init.add_listener
def keep_environment(environment, **_):
    measure.environment = environment
