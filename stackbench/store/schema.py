"""The current schema of the results store. A new store is made from this; an older
one is brought here by migrations.py, step by step."""

VERSION = 18

SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,           -- UTC, ISO 8601
    finished_at TEXT,
    status TEXT NOT NULL,               -- running | complete | interrupted | failed
    error TEXT,
    plan_name TEXT NOT NULL,
    plan_source TEXT NOT NULL,
    plan_json TEXT NOT NULL,            -- the plan file's data as written
    plan_checked_json TEXT,             -- the plan after checking: every default resolved (NULL before v4)
    environment_json TEXT NOT NULL,
    stop_json TEXT,                     -- repetitions run and why they stopped (NULL before v5)
    network_json TEXT                   -- network profiles asked and measured (NULL: loopback only)
);
CREATE TABLE configs (                  -- rendered config files, stored once per content
    hash TEXT PRIMARY KEY,
    files_json TEXT NOT NULL            -- {relative path: text}
);
CREATE TABLE cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    stack_id TEXT NOT NULL,
    stack_label TEXT NOT NULL,
    knobs_json TEXT NOT NULL,           -- every knob, defaults resolved
    workload TEXT NOT NULL,
    concurrency INTEGER NOT NULL,
    keepalive INTEGER NOT NULL,
    status TEXT NOT NULL,               -- ok | failed
    error TEXT,
    config_hash TEXT REFERENCES configs(hash),
    versions_json TEXT NOT NULL,
    pinning_json TEXT NOT NULL,
    started_unix_us INTEGER,
    duration_us INTEGER,
    requests_completed INTEGER,
    requests_failed INTEGER,
    non_2xx INTEGER,
    requests_per_s REAL,
    latency_mean_us REAL,
    latency_p50_us INTEGER,
    latency_p99_us INTEGER,
    engine_json TEXT,                   -- the engine's whole result document
    connections_measured INTEGER,       -- connections of the measured phase
    connections_without_response INTEGER,  -- of those, how many never got a response
    warnings_json TEXT NOT NULL DEFAULT '[]',  -- caveats: [{"code": ..., "params": {...}}]
    -- what the stack cost during the measured window (NULL = not measured)
    mem_peak_bytes INTEGER,             -- cgroup peak, page cache included
    mem_rss_peak_bytes INTEGER,         -- highest sampled anonymous memory (+ shmem)
    cpu_user_us INTEGER,
    cpu_system_us INTEGER,              -- user/system: USER_HZ resolution (10 ms) on cgroup v1
    cpu_total_us INTEGER,               -- user + system, exact (cpuacct.usage)
    cpu_window_us INTEGER,              -- wall time the CPU figures cover
    procs_max INTEGER,
    threads_max INTEGER,
    syscalls_total INTEGER,             -- over syscalls_window_us of the profile pass
    syscalls_window_us INTEGER,
    syscalls_requests_per_s REAL,       -- the profile pass's throughput (perf slows it)
    engine_cpu_us INTEGER,
    monitor_notes_json TEXT NOT NULL DEFAULT '[]',
    server_steal_share REAL,            -- server cores' time taken by the hypervisor (NULL: not read)
    pages_completed INTEGER,            -- page mode: page views with every asset answered (else NULL)
    pages_failed INTEGER,
    pages_per_s REAL,
    page_load_p50_us INTEGER,           -- page request start -> last byte of the last asset
    page_load_p99_us INTEGER,
    php_json TEXT,                      -- PHP's state in force, read back while verifying: {opcache, sapi, php}
    service_mem_peak_bytes INTEGER,     -- the workload's services (a database), in their own cgroup
    service_cpu_us INTEGER,             -- over the same window as cpu_total_us
    load TEXT NOT NULL DEFAULT 'closed', -- closed | rate | stages | capacity (a search's probe)
    rate REAL,                          -- open loop: requests/s asked (concurrency = the engine's connections)
    leg TEXT,                           -- up | down: the way of an up-then-down ramp (else NULL)
    step INTEGER,                       -- position in a walk on one running stack (ramp, stages, search)
    requests_due INTEGER,               -- open loop: requests due in the measured phase
    requests_not_sent INTEGER,          -- open loop: of those, never sent (every connection busy)
    network TEXT NOT NULL DEFAULT 'loopback', -- the network profile between clients and the stack
    background TEXT NOT NULL DEFAULT 'none', -- visitor classes loading the stack beside the measured ones ("slow", …)
    classes_json TEXT,                  -- visitor classes: {class: engine summary}; the cell's own figures are the measured class's
    memory_events_json TEXT,            -- machine profile: memory-limit hits, OOM kills, reclaim pressure (NULL: no limit)
    oom_kills INTEGER,                  -- processes of the stack the OOM killer took during the cell (NULL: not read)
    protocol TEXT NOT NULL DEFAULT 'http/1.1', -- asked: http/1.1 (clear text) | https | h2
    handshake TEXT,                     -- TLS: keep-alive | resumed | full (NULL: clear text)
    streams INTEGER,                    -- HTTP/2: concurrent streams per connection (NULL: not HTTP/2)
    negotiated_json TEXT,               -- the stack's read-back over this protocol: {alpn, version, cipher, group}
    protocol_spoken TEXT,               -- what the engine spoke: http/1.1 | h2 | mixed (NULL: not reported)
    tls_full INTEGER,                   -- the engine's full TLS handshakes (NULL: clear text)
    tls_resumed INTEGER,                -- … and resumed ones (session tickets)
    handshake_p50_us INTEGER,           -- TLS handshake time per connection, client side
    handshake_p99_us INTEGER,
    warmup_json TEXT,                   -- how the stack was warmed: {seconds, steady, fresh, windows, …} (NULL: no warm-up)
    warmup_us INTEGER,                  -- load before the measured window (a steady warm-up's: its time to steady, or its cap)
    steady INTEGER,                     -- 1: steady within the cap; 0: the cap came first; NULL: a fixed warm-up, or none
    cache_json TEXT,                    -- the cache in front's own counts: {server, hits, misses, passes} (NULL: none, or before v16)
    logged_in REAL,                     -- visits: the share of visitors who logged in, 0 to 1 (NULL: not visits)
    UNIQUE (run_id, seq)
);
CREATE INDEX cells_by_run ON cells(run_id, seq);
CREATE TABLE samples (                  -- the stack's cgroup, every sampling interval
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    t_unix_us INTEGER NOT NULL,         -- same clock as the engine's started_unix_us
    mem_usage_bytes INTEGER,
    mem_rss_bytes INTEGER,
    mem_shmem_bytes INTEGER,
    mem_cache_bytes INTEGER,
    cpu_usage_us INTEGER,               -- cumulative since the cgroup was made
    cpu_user_us INTEGER,
    cpu_system_us INTEGER,
    procs INTEGER,
    threads INTEGER
);
CREATE INDEX samples_by_cell ON samples(cell_id, t_unix_us);
CREATE TABLE processes (                -- one snapshot per cell, right after the load
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    pid INTEGER NOT NULL,
    ppid INTEGER NOT NULL,
    comm TEXT NOT NULL,
    rss_bytes INTEGER,
    pss_bytes INTEGER,
    threads INTEGER,
    pss_anon_bytes INTEGER,             -- PSS's parts (smaps_rollup); NULL before v13
    pss_shmem_bytes INTEGER,
    pss_file_bytes INTEGER
);
CREATE TABLE status_samples (          -- the servers' own status pages, about once a second
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    t_unix_us INTEGER NOT NULL,
    server TEXT NOT NULL,
    values_json TEXT NOT NULL
);
CREATE TABLE searches (                 -- capacity searches: the probes are cells seq, seq + 1, ...
    run_id INTEGER NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,               -- the first probe's seq
    repetition INTEGER NOT NULL,
    stack_label TEXT NOT NULL,
    workload TEXT NOT NULL,
    keepalive INTEGER NOT NULL,
    stopped TEXT NOT NULL,              -- converged | ceiling | floor | generator | probes | budget | failed
    seconds REAL,                       -- wall time of the search
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE tunings (                 -- `stackbench tune`: a stack's best pool for one question
    id INTEGER PRIMARY KEY,
    probe_run_id INTEGER REFERENCES runs(id),      -- the memory probe's run
    run_id INTEGER NOT NULL REFERENCES runs(id),   -- the candidates' run: a cell per candidate and repetition
    stack_id TEXT NOT NULL,
    workload TEXT NOT NULL,
    key_json TEXT NOT NULL,             -- what a reuse must match: concurrency, keep-alive, machine, SLO, knobs
    question_json TEXT NOT NULL,        -- the key and how it was measured (windows, repetitions)
    memory_json TEXT,                   -- the probe: a worker's and the rest's bytes, the limit, the bound
    sizes_json TEXT NOT NULL,           -- {candidate's label: pool size}
    chosen_size INTEGER NOT NULL,
    knobs_json TEXT NOT NULL,           -- the chosen candidate's knobs (what a plan's knobs = "tuned" takes)
    reason TEXT NOT NULL,               -- analysis/tuning.py Reason: best | smallest_tied | smallest_meets | none_served | …
    created_at TEXT NOT NULL,           -- UTC, ISO 8601
    slow_cost_json TEXT                 -- what one slow request cost the others (a mix with slow requests; else NULL)
);
CREATE TABLE sizings (                 -- a plan's [sizing]: the machine to buy (runner/sizing.py)
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,                 -- the plan's name
    question_json TEXT NOT NULL,        -- target, sizes (planning/sizing.py as_dict)
    stacks_json TEXT NOT NULL,          -- the plan's stack labels, in its order (a size's run relabels tuned ones)
    runs_json TEXT NOT NULL,            -- [{"size": label, "run_id": N|null, "skipped": {stack: tuning id}?}]: each size's capacity run, in the order measured
    created_at TEXT NOT NULL,           -- UTC, ISO 8601
    yardstick_json TEXT                 -- the server's core, pooled over the sizes' runs (NULL: not measured, or before v13)
);
CREATE TABLE syscalls (                 -- counts over the cell's syscalls_window_us (profile pass)
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    name TEXT NOT NULL,                 -- a call, "total" (all calls) or "other"
    count INTEGER NOT NULL,
    PRIMARY KEY (cell_id, name)
);
"""
