"""`stackbench yardstick`: this machine's core measured by the lab's yardstick
(stackbench/yardstick/) and printed — on any machine with PHP's command-line interpreter,
without root or the lab's lock, so a user can carry a sizing to their own server
(`stackbench sizings ID --core N`, docs/methods/sizing.md)."""

from __future__ import annotations

import argparse
import json
import sys

from stackbench import yardstick
from stackbench.report.text import yardstick as yardstick_text
from stackbench.upkeep import environment, pinning


def cmd_yardstick(args: argparse.Namespace) -> int:
    # The core a run gives the stack (upkeep/pinning.py): the one its yardstick is measured on.
    cores = pinning.choose().server_cpus
    found = yardstick.measure(cores[0] if cores else None)
    if args.json:
        print(json.dumps(found.as_dict() | {"cpu_model": environment.cpu_model()}))
    else:
        yardstick_text.render(found, environment.cpu_model(), sys.stdout)
    return 0
