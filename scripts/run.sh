#!/usr/bin/env bash
# `make run`: serve session logs in embedded mode with the web console.
#
#   scripts/run.sh [SESSIONS] [DATA]
#
# SESSIONS  dsh session root(s) or log files, ':'-separated; empty = write a demo corpus
#           to .sessionq/demo (24 sessions) and serve that.
# DATA      data directory (default .sessionq/demo-data for the demo corpus,
#           .sessionq/data for SESSIONS given: the demo never mixes into a user's store).
# SESSIONQ_LISTEN  HOST:PORT to listen on (default 127.0.0.1:8765).
# VENV      virtualenv to use (default .venv, which `make run` creates).
#
# The server runs until Ctrl-C (or SIGTERM) stops it. A background poller waits until
# this run's server is ready (its pid answers /v1/status), then prints the console URL
# and example calls; both are stopped on exit.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

SESSIONS="${1:-}"
DATA="${2:-}"
LISTEN="${SESSIONQ_LISTEN:-127.0.0.1:8765}"
VENV="${VENV:-.venv}"
PY="$VENV/bin/python"
SQ="$VENV/bin/sessionq"

if [[ ! -x "$PY" || ! -x "$SQ" ]]; then
    echo "run.sh: no sessionq in $VENV; run 'make run' (it creates the venv first)" >&2
    exit 1
fi

# A port that cannot be listened on is said here in make's words (serve's own line
# names its --listen flag, which make run does not take).
if ! why="$("$PY" -c 'import socket, sys
host = sys.argv[1].strip("[]")
family = socket.AF_INET6 if ":" in host else socket.AF_INET
try:
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(sys.argv[2])))
except (OSError, ValueError) as exc:
    sys.exit(getattr(exc, "strerror", None) or str(exc))' "${LISTEN%:*}" "${LISTEN##*:}" 2>&1)"; then
    echo "run.sh: cannot listen on $LISTEN ($why): pick another address, e.g." \
        "SESSIONQ_LISTEN=127.0.0.1:8766 make run" >&2
    exit 2
fi

if [[ -z "$DATA" && -z "$SESSIONS" ]]; then
    DATA=.sessionq/demo-data
fi
DATA="${DATA:-.sessionq/data}"
if [[ -z "$SESSIONS" ]]; then
    SESSIONS=.sessionq/demo
    if "$SQ" demo-corpus --help >/dev/null 2>&1; then
        "$SQ" demo-corpus --out "$SESSIONS" --sessions 24
    else
        "$PY" -m worker.devtools.demo_corpus --out "$SESSIONS" --sessions 24
    fi
fi

# SESSIONS=~/x reaches us unexpanded when make passes it through quoted.
PATHS=()
IFS=':' read -r -a RAW <<<"$SESSIONS"
for p in "${RAW[@]}"; do
    [[ -z "$p" ]] && continue
    [[ "$p" == "~" || "$p" == "~/"* ]] && p="$HOME${p#\~}"
    PATHS+=("$p")
done
if [[ ${#PATHS[@]} -eq 0 ]]; then
    echo "run.sh: no session paths given" >&2
    exit 2
fi

HOST="${LISTEN%:*}"
PORT="${LISTEN##*:}"
case "$HOST" in
    "" | 0.0.0.0) HOST=127.0.0.1 ;;
    "[::]" | "::") HOST="[::1]" ;;
esac
BASE="http://$HOST:$PORT"

ready() {
    # This run's server is ready (not another one that holds the port: the status
    # names the pid that answers).
    "$PY" -c 'import json, sys, urllib.request as u
status = json.load(u.build_opener(u.ProxyHandler({})).open(sys.argv[1] + "/v1/status", timeout=2))
sys.exit(0 if status.get("ready") and status.get("pid") == int(sys.argv[2]) else 1)' \
        "$BASE" "$1" >/dev/null 2>&1
}

announce() {
    until ready "$1"; do
        kill -0 "$1" 2>/dev/null || exit 0
        sleep 0.2
    done
    "$PY" -c 'import sys
from worker.devtools.demo_corpus import print_examples
print_examples(sys.argv[1], sys.argv[2:])' "$BASE" "${PATHS[@]}" || true
}

SERVER=
POLLER=
cleanup() {
    if [[ -n "$POLLER" ]]; then
        kill "$POLLER" 2>/dev/null || true
        wait "$POLLER" 2>/dev/null || true
    fi
    if [[ -n "$SERVER" ]]; then
        # The server stops within 5 s of its SIGTERM; one that does not is ended.
        kill -TERM "$SERVER" 2>/dev/null || true
        for _ in $(seq 100); do
            kill -0 "$SERVER" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
    fi
}
trap cleanup EXIT

# The server runs in a process group of its own (job control on for this one command):
# Ctrl-C reaches this script only, which passes it on as one SIGTERM.
set -m
"$SQ" serve --sessions "${PATHS[@]}" --data "$DATA" --listen "$LISTEN" &
SERVER=$!
set +m
trap 'kill -TERM "$SERVER" 2>/dev/null || true' INT TERM
announce "$SERVER" &
POLLER=$!
set +e  # the server's exit status is this script's; a signal only ends one wait
status=0
while true; do
    wait "$SERVER"
    status=$?
    kill -0 "$SERVER" 2>/dev/null || break  # a signal ended the wait, not the server
done
SERVER=
exit "$status"
