"""Make a large run for timing the read side: copy a stored run's cells (and their
samples, processes, status samples and system calls) as further repetitions, until the
run has TIMES × its repetitions. Writes into the store given (use a copy).

    python bench/read-side/enlarge.py STORE RUN TIMES
"""

import sqlite3
import sys

TABLES = ("samples", "processes", "status_samples", "syscalls")


def enlarge(path: str, run: int, times: int) -> int:
    db = sqlite3.connect(path)
    cols = [r[1] for r in db.execute("PRAGMA table_info(cells)")]
    cells = db.execute("SELECT * FROM cells WHERE run_id = ?", (run,)).fetchall()
    seq_span = max(c[cols.index("seq")] for c in cells) + 1
    reps = max(c[cols.index("repetition")] for c in cells) + 1
    table_cols = {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in TABLES}
    for k in range(1, times):
        for c in cells:
            d = dict(zip(cols, c))
            old = d.pop("id")
            d["seq"] += k * seq_span
            d["repetition"] += k * reps
            new = db.execute(f"INSERT INTO cells ({','.join(d)}) VALUES ({','.join('?' * len(d))})",
                             list(d.values())).lastrowid
            for t, tc in table_cols.items():
                for r in db.execute(f"SELECT * FROM {t} WHERE cell_id = ?", (old,)).fetchall():
                    r = list(r)
                    r[tc.index("cell_id")] = new
                    db.execute(f"INSERT INTO {t} VALUES ({','.join('?' * len(r))})", r)
    db.commit()
    return db.execute("SELECT COUNT(*) FROM cells WHERE run_id = ?", (run,)).fetchone()[0]


if __name__ == "__main__":
    print(f"run {sys.argv[2]}: {enlarge(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))} cells")
