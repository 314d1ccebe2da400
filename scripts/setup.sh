#!/usr/bin/env bash
# One-shot, idempotent set-up for a fresh Debian 12 machine: the servers under test
# (Debian's packages, with services kept from auto-starting), a Python virtualenv with
# stackbench, and the Rust load engine in release mode. Each step is skipped when done.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every server the stack table names that Debian packages, plus the reference clients
# (wrk, ab) and the measuring tools. Kept in one list so `stackbench stacks` and this file
# agree; each stack names the binary -> package map in its requirements()
# (stackbench/servers/*.py: REQUIREMENTS).
PACKAGES=(
  nginx apache2 libapache2-mod-php8.2 libapache2-mod-fcgid
  php8.2-fpm php8.2-cli php8.2-cgi php8.2-opcache
  varnish lighttpd h2o caddy haproxy
  libjetty9-java libjetty9-extra-java openjdk-17-jre-headless   # jetty-fpm: Jetty 9.4's jars (its FastCGI proxy is in -extra) and a JVM; not `jetty9`, which only adds a system service and /etc/jetty9
  lighttpd-mod-openssl hitch   # HTTPS: lighttpd's TLS module is a package of its own; hitch terminates TLS for Varnish
  nghttp2-client               # h2load, the reference HTTP/2 client the engine's bar is measured against
  wrk apache2-utils strace linux-perf iproute2 util-linux procps gcc
  mariadb-server php8.2-mysql wordpress wordpress-theme-twentytwentythree   # the wordpress workload (MariaDB run by the lab)
  python3-venv   # Debian's python3 has no venv/ensurepip without it
  chromium       # for the report test: the HTML report opened in headless Chromium
  openssh-client openssh-server   # clients on other hosts (hosts.client = ["ssh:…"]); the test runs an sshd in a namespace
)

need_root() { [ "$(id -u)" = 0 ] || { echo "setup: run as root (apt-get install)" >&2; exit 1; }; }

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  need_root
  # Debian's maintainer scripts start services on install; the lab never uses system
  # services, so forbid that (exit 101 = "action forbidden", invoke-rc.d(8)).
  if [ ! -x /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python: a venv with the package in editable mode plus test dependencies and the type
# checker (mypy, the `dev` extra: tests/test_types.py runs it).
if [ ! -x .venv/bin/python ] || [ pyproject.toml -nt .venv/.installed ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test,dev]'
  touch .venv/.installed
fi

# Rust: the load engine, release build (cargo is a no-op when up to date). It needs
# Rust >= 1.85 (edition 2024, loadgen/Cargo.toml's rust-version). A rustup toolchain in
# ~/.cargo is used when present; otherwise Debian 12's own modern toolchain
# (cargo-web/rustc-web, from bookworm and bookworm-security), since rustup's servers
# cannot be reached from many machines. Debian's plain `cargo` (1.63) is too old.
RUST_MIN=1.85
rust_ok() {
  command -v cargo >/dev/null || return 1
  local v; v=$(cargo --version 2>/dev/null | awk '{print $2}')
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$RUST_MIN" "$v" | sort -V | head -1)" = "$RUST_MIN" ]
}
if ! rust_ok && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! rust_ok; then
  need_root
  echo "setup: no cargo >= $RUST_MIN found; installing Debian's cargo-web and rustc-web"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends cargo-web rustc-web >/dev/null
  hash -r
  if ! rust_ok; then
    echo "setup: cargo is still missing or older than $RUST_MIN ($(cargo --version 2>&1 || true))" >&2
    exit 1
  fi
fi
cargo build --release --quiet --manifest-path loadgen/Cargo.toml
cargo build --release --quiet --manifest-path netshape/Cargo.toml   # the link emulator (delay/loss between namespaces)
