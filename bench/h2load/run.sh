#!/usr/bin/env bash
# stackbench-load against h2load (Debian's nghttp2-client) on one nginx with TLS:
# the engine bar of issue 24. Same nginx, same connections and streams, the two
# clients alternating round by round (drift hits both alike):
#   https-keepalive  HTTPS/1.1, 64 connections kept alive
#   https-full       HTTPS/1.1, 64 connections, a new connection and a full
#                    handshake per request (nginx's server for it has tickets and
#                    the session cache off: h2load resumes whenever it can, so
#                    only the server can make its handshakes full)
#   https-resumed    HTTPS/1.1, a new connection per request resuming a ticket
#                    (h2load with "Connection: close" resumes; engine --handshake resumed)
#   https-big        HTTPS/1.1, 64 connections kept alive, a 150 KB file (records
#                    to decrypt: the bulk of TLS, not its handshakes)
#   h2-m10           HTTP/2, 16 connections x 10 streams
#   https-10k        HTTPS/1.1, 10,000 connections kept alive: the clients' memory
#                    (peak RSS, GNU time's %M) with that many TLS connections open
# nginx: 1 worker pinned to core 0, 12-byte file, access log off,
# keepalive_requests 1000000. Clients pinned to core 1, one at a time.
# Throughput = the client's own completed requests / its run; client CPU =
# user + system of the whole client process (GNU time) / completed requests;
# nginx CPU = its worker's user + system over the client's run / the client's
# completed requests (the server's cost of a request, as each client drives it).
# WAKES=1 also counts, with perf, the wake-ups made on nginx's core over each run
# (sched:sched_waking on core 0: almost all nginx waking a client asleep in
# epoll_wait, which nginx pays for inside its write; everything else waking there
# made at most 0.024 a request in bench/RESULTS.md's runs) and prints them a request.
# The engine trusts the lab's leaf by --pin-cert (h2load verifies nothing).
#
# Usage: bench/h2load/run.sh [ROUNDS (default 3)] [SECONDS per run (default 5)]
# Env: ENGINE=path to stackbench-load (default loadgen/target/release/stackbench-load),
#      CASES="https-keepalive https-full https-resumed h2-m10" (a subset to run),
#      THIRD=tasks (or TASKS=1) adds a third client, the same engine on its task loop
#      (STACKBENCH_LOAD_LOOP=tasks): the default runs https/1.1 on the direct loop
#      (client/direct.rs), so this is the A/B of the two loops, paired by round;
#      THIRD=block adds the engine without coalesced waits (STACKBENCH_LOAD_WAIT=block),
#      THIRD=pace the engine with them (=pace): client/pacer.rs paces h2-m10 (several
#      streams a connection) by default and the HTTPS/1.1 cases only with =pace, so
#      their A/B is THIRD=block for h2-m10 and THIRD=pace for the others;
#      WAKES=1 (any non-empty value) the wake-ups on nginx's core, above.
# Needs nginx, h2load, openssl, taskset, GNU time, pgrep (perf with WAKES).
# Traffic: loopback only.
set -euo pipefail

ROUNDS=${1:-3}
SECS=${2:-5}
THIRD=${THIRD:-${TASKS:+tasks}}
case "$THIRD" in ""|tasks|pace|block) ;; *) echo "run.sh: THIRD is tasks, block or pace, not '$THIRD'" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ENGINE=${ENGINE:-$ROOT/loadgen/target/release/stackbench-load}
CASES=${CASES:-https-keepalive https-full https-resumed h2-m10 https-10k}
for tool in nginx h2load openssl taskset /usr/bin/time python3 ${WAKES:+perf}; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool is not installed" >&2; exit 2; }
done
[ -x "$ENGINE" ] || { echo "run.sh: no engine at $ENGINE (cargo build --release in loadgen/)" >&2; exit 2; }

DIR=$(mktemp -d /tmp/stackbench-h2load-XXXXXX)
NGINX_PID=
cleanup() {
    if [ -n "$NGINX_PID" ]; then kill -QUIT "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; fi
    rm -rf "$DIR"   # the CA's and the leaf's private keys go with it
}
trap cleanup EXIT
trap 'exit 130' INT TERM
chmod 755 "$DIR"   # nginx's worker (nobody) reads www/ and the certificate

# A CA and a leaf for 127.0.0.1 (ECDSA P-256); private keys mode 0600.
(
    cd "$DIR"
    umask 077
    openssl ecparam -name prime256v1 -genkey -noout -out ca.key
    openssl req -x509 -new -key ca.key -subj "/CN=stackbench bench CA" -days 1 -out ca.pem
    openssl ecparam -name prime256v1 -genkey -noout -out leaf.key
    openssl req -new -key leaf.key -subj "/CN=127.0.0.1" -out leaf.csr
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' > leaf.ext
    openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile leaf.ext -out leaf.pem 2>/dev/null
    chmod 644 ca.pem leaf.pem
) >/dev/null
mkdir -p "$DIR/www"
printf 'hello world\n' > "$DIR/www/index.html"
head -c 153600 /dev/urandom > "$DIR/www/big.bin"

PORTS=$(python3 -c '
import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')
read -r PORT_T PORT_F <<<"$PORTS"
cat > "$DIR/nginx.conf" <<CONF
daemon off;
worker_processes 1;
error_log $DIR/error.log warn;
pid $DIR/nginx.pid;
worker_rlimit_nofile 20200;
events { worker_connections 20100; }
http {
    access_log off;
    client_body_temp_path $DIR/client_body;
    proxy_temp_path $DIR/proxy;
    fastcgi_temp_path $DIR/fastcgi;
    uwsgi_temp_path $DIR/uwsgi;
    scgi_temp_path $DIR/scgi;
    default_type text/html;
    keepalive_requests 1000000;
    ssl_certificate $DIR/leaf.pem;
    ssl_certificate_key $DIR/leaf.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    # With tickets: keep-alive, resumed and HTTP/2.
    server {
        listen 127.0.0.1:$PORT_T ssl http2 backlog=4096;
        ssl_session_tickets on;
        ssl_session_timeout 10m;
        root $DIR/www;
    }
    # No tickets, no session cache: every handshake is full, whoever the client.
    server {
        listen 127.0.0.1:$PORT_F ssl http2 backlog=4096;
        ssl_session_tickets off;
        ssl_session_cache off;
        root $DIR/www;
    }
}
CONF
nginx -t -q -p "$DIR/" -c "$DIR/nginx.conf"
taskset -c 0 nginx -p "$DIR/" -c "$DIR/nginx.conf" &
NGINX_PID=$!
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT_T") 2>/dev/null && break
    sleep 0.1
done

URL_T="https://127.0.0.1:$PORT_T/"
URL_F="https://127.0.0.1:$PORT_F/"
PIN=(--pin-cert "$DIR/leaf.pem")

command_of() {  # client case -> the command line
    case "$1" in
        tasks) echo "env STACKBENCH_LOAD_LOOP=tasks $(command_of engine "$2")"; return ;;
        pace|block) echo "env STACKBENCH_LOAD_WAIT=$1 $(command_of engine "$2")"; return ;;
    esac
    case "$1/$2" in
        engine/https-keepalive) echo "$ENGINE --json -c 64 -d ${SECS}s ${PIN[*]} $URL_T" ;;
        h2load/https-keepalive) echo "h2load --h1 -c 64 -D $SECS $URL_T" ;;
        # h2load 1.52 hangs at the end of a -D run whose clients reconnect, so the
        # connection-per-request cases run a fixed count (-n) in both clients.
        engine/https-big)       echo "$ENGINE --json -c 64 -d ${SECS}s ${PIN[*]} ${URL_T}big.bin" ;;
        h2load/https-big)       echo "h2load --h1 -c 64 -D $SECS ${URL_T}big.bin" ;;
        engine/https-full)      echo "$ENGINE --json -c 64 -n $((SECS * 2000)) --handshake full ${PIN[*]} $URL_F" ;;
        h2load/https-full)      echo "h2load --h1 -c 64 -n $((SECS * 2000)) -H Connection:close $URL_F" ;;
        engine/https-resumed)   echo "$ENGINE --json -c 64 -n $((SECS * 4000)) --handshake resumed ${PIN[*]} $URL_T" ;;
        h2load/https-resumed)   echo "h2load --h1 -c 64 -n $((SECS * 4000)) -H Connection:close $URL_T" ;;
        engine/h2-m10)          echo "$ENGINE --json -c 16 --http2 --streams 10 -d ${SECS}s ${PIN[*]} $URL_T" ;;
        h2load/h2-m10)          echo "h2load -c 16 -m 10 -D $SECS $URL_T" ;;
        engine/https-10k)       echo "$ENGINE --json -c 10000 -d ${SECS}s --timeout 30s ${PIN[*]} $URL_T" ;;
        h2load/https-10k)       echo "h2load --h1 -c 10000 -D $SECS $URL_T" ;;
    esac
}

# One run: prints "requests seconds cpu_s failed rss_kb nginx_s wakes"
# (client-reported completions and duration, GNU time's user + system, failed
# requests, peak RSS, nginx's worker's CPU over the run, the wake-ups on its core
# or -1 without WAKES).
run_one() {
    local cmd out time_file
    cmd=$(command_of "$1" "$2")
    out="$DIR/out"; time_file="$DIR/time"
    worker_ticks > "$DIR/ticks0"
    # perf, with WAKES, counts on core 0 for exactly the client's run (it wraps it).
    local counted=()
    [ -n "${WAKES:-}" ] && counted=(perf stat -x, -C 0 -e sched:sched_waking -o "$DIR/wakes" --)
    # shellcheck disable=SC2086  # the command is split on purpose
    local rc=0
    "${counted[@]}" /usr/bin/time -f '%U %S %M' -o "$time_file" timeout $((SECS * 6 + 30)) taskset -c 1 $cmd >"$out" 2>"$DIR/err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        # h2load says why on stdout; 124 is timeout's.
        echo "run.sh: '$cmd' failed (exit $rc): $(tail -3 "$DIR/err") $(tail -5 "$out")" >&2
        return 1
    fi
    worker_ticks > "$DIR/ticks1"
    local wakes=-1
    if [ -n "${WAKES:-}" ]; then
        wakes=$(awk -F, '/sched_waking/ {print $1}' "$DIR/wakes")
        [[ $wakes =~ ^[0-9]+$ ]] || { echo "run.sh: perf counted no wake-ups: $(cat "$DIR/wakes")" >&2; return 1; }
    fi
    python3 - "$1" "$out" "$time_file" "$(cat "$DIR/ticks0")" "$(cat "$DIR/ticks1")" "$(getconf CLK_TCK)" "$wakes" <<'PY'
import json, re, sys
client, out, tf = sys.argv[1:4]
server_s = (int(sys.argv[5]) - int(sys.argv[4])) / int(sys.argv[6])
wakes = int(sys.argv[7])
user, system, rss_kb = map(float, open(tf).read().split()[-3:])
text = open(out).read()
if client in ("engine", "tasks", "pace", "block"):
    d = json.loads(text)
    done, secs = d["requests"]["completed"], d["duration_us"] / 1e6
    failed = d["requests"]["failed"]
else:
    done = int(re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed", text).group(1))
    failed = int(re.search(r"requests: .*?(\d+) failed", text).group(1))
    m = re.search(r"finished in ([\d.]+)(m?s)", text)
    secs = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
print(done, secs, user + system, failed, int(rss_kb), server_s, wakes)
PY
}

# nginx's worker: user + system clock ticks so far (fields 14 and 15 of its stat;
# the name field has no spaces here).
worker_ticks() {
    awk '{print $14 + $15}' "/proc/$(pgrep -P "$NGINX_PID" | head -1)/stat"
}

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"   # 10,000 connections (h2load does not raise it itself)
printf '%-16s %-7s %10s %12s %8s %12s %14s %10s\n' case client "req/s" "CPU us/req" failed "peak RSS MB" "nginx us/req" "wakes/req"
RESULTS="$DIR/results"
: > "$RESULTS"
for round in $(seq "$ROUNDS"); do
    for case_ in $CASES; do
        # Alternate who goes first, round by round.
        if [ -n "$THIRD" ]; then
            case $((round % 3)) in
                1) order="engine $THIRD h2load" ;; 2) order="$THIRD h2load engine" ;; *) order="h2load engine $THIRD" ;;
            esac
        elif [ $((round % 2)) -eq 1 ]; then order="engine h2load"; else order="h2load engine"; fi
        for client in $order; do
            read -r done secs cpu failed rss server wakes < <(run_one "$client" "$case_")
            python3 -c "
import sys
d, s, c, n, w = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[8]), int(sys.argv[9])
per = lambda x, scale=1e6: x / d * scale if d else float('nan')
print('%-16s %-7s %10.0f %12.2f %8s %12.1f %14.2f %10s' % (sys.argv[4], sys.argv[5], d / s, per(c), sys.argv[6],
      int(sys.argv[7]) / 1024, per(n), '%.3f' % per(w, 1) if w >= 0 else '-'))" \
                "$done" "$secs" "$cpu" "$case_" "$client" "$failed" "$rss" "$server" "$wakes"
            echo "$case_ $client $done $secs $cpu $rss $server $wakes" >> "$RESULTS"
            sleep 1   # TIME_WAIT and nginx settle between runs
        done
    done
done

echo
echo "medians over $ROUNDS rounds (engine / h2load; the ratios are each round's own, engine and h2load back to back, then their median):"
python3 - "$RESULTS" "$THIRD" <<'PY'
import statistics, sys
third = sys.argv[2]
rows = [l.split() for l in open(sys.argv[1])]
cases = list(dict.fromkeys(r[0] for r in rows))
print("%-16s %12s %12s %7s %14s %14s %7s %10s %10s" % ("case", "engine req/s", "h2load req/s", "ratio", "engine us/req", "h2load us/req", "ratio", "engine MB", "h2load MB"))
for c in cases:
    def series(client, what):
        vals = []
        for r in rows:
            if r[0] == c and r[1] == client:
                done, secs, cpu = int(r[2]), float(r[3]), float(r[4])
                vals.append({"rate": done / secs, "cpu": cpu / done * 1e6, "rss": int(r[5]) / 1024,
                             "server": float(r[6]) / done * 1e6, "wakes": int(r[7]) / done}[what])
        return vals
    def med(client, what):
        return statistics.median(series(client, what))
    def paired(what, a="engine", b="h2load"):
        # Round by round, not median against median: the machine drifts between rounds.
        return statistics.median(e / h for e, h in zip(series(a, what), series(b, what)))
    er, hr = med("engine", "rate"), med("h2load", "rate")
    ec, hc = med("engine", "cpu"), med("h2load", "cpu")
    em, hm = med("engine", "rss"), med("h2load", "rss")
    print("%-16s %12.0f %12.0f %7.3f %14.2f %14.2f %7.3f %10.1f %10.1f" % (c, er, hr, paired("rate"), ec, hc, paired("cpu"), em, hm))
    print("%-16s nginx's CPU a request: %.2f us driven by the engine, %.2f by h2load (ratio %.3f)" % (
        "", med("engine", "server"), med("h2load", "server"), paired("server")))
    if series("engine", "wakes")[0] >= 0:  # -1: not counted (no WAKES)
        print("%-16s wake-ups on nginx's core a request: %.3f by the engine, %.3f by h2load" % (
            "", med("engine", "wakes"), med("h2load", "wakes")))
    if third and series(third, "rate"):
        name = {"tasks": "task loop", "pace": "engine with coalesced waits (pace)",
                "block": "engine without coalesced waits (block)"}[third]
        print("%-16s %s: %.0f req/s, %.2f us/req (against h2load %.3f / %.3f); engine / %s: throughput %.3f, CPU %.3f; nginx %.2f us/req%s" % (
            "", name, med(third, "rate"), med(third, "cpu"), paired("rate", third), paired("cpu", third), third,
            paired("rate", "engine", third), paired("cpu", "engine", third), med(third, "server"),
            ", %.3f wake-ups on nginx's core a request" % med(third, "wakes") if series(third, "wakes")[0] >= 0 else ""))
PY
