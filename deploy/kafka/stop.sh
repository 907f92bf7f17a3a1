#!/usr/bin/env bash
# Stop the broker started by deploy/kafka/start.sh on a data dir.
#
# Usage: deploy/kafka/stop.sh [--data DIR] [--timeout SECONDS] [--purge]
#
#   --data DIR     the same data dir given to start.sh (default: $SESSIONQ_KAFKA_DATA
#                  or <repo>/.sessionq/kafka).
#   --timeout S    how long to wait after SIGTERM (controlled shutdown) before
#                  SIGKILL (default 30).
#   --purge        afterwards delete the data dir (topics, KRaft metadata, logs).
#
# Exits 0 when no broker is running (already stopped is not an error).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/../.." && pwd)
DATA_DIR=${SESSIONQ_KAFKA_DATA:-$REPO_ROOT/.sessionq/kafka}
TIMEOUT=30
PURGE=0

log() { printf 'kafka/stop.sh: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; }

while (($#)); do
    case "$1" in
        --data) DATA_DIR=${2:?--data needs a directory}; shift 2 ;;
        --data=*) DATA_DIR=${1#*=}; shift ;;
        --timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
        --timeout=*) TIMEOUT=${1#*=}; shift ;;
        --purge) PURGE=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage; die "unknown argument: $1" ;;
    esac
done
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds, got '$TIMEOUT'"

if [[ ! -d "$DATA_DIR" ]]; then
    log "no data dir $DATA_DIR: nothing to stop"
    exit 0
fi
DATA_DIR=$(cd -- "$DATA_DIR" && pwd)
PID_FILE="$DATA_DIR/kafka.pid"
CONFIG="$DATA_DIR/server.properties"

# Only signal the pid if it still is this data dir's broker (pids get reused).
is_our_broker() {  # pid
    [[ -r "/proc/$1/cmdline" ]] || { kill -0 "$1" 2>/dev/null; return; }
    tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "kafka.Kafka $CONFIG"
}

if [[ -f "$PID_FILE" ]]; then
    pid=$(<"$PID_FILE")
    if [[ "$pid" =~ ^[0-9]+$ ]] && is_our_broker "$pid"; then
        log "stopping broker pid $pid (SIGTERM, up to ${TIMEOUT}s)"
        kill -TERM "$pid" 2>/dev/null || true
        deadline=$((SECONDS + TIMEOUT))
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "still alive after ${TIMEOUT}s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
        fi
        log "stopped"
    else
        log "pid file is stale (pid ${pid:-?} is not this broker)"
    fi
    rm -f -- "$PID_FILE" "$DATA_DIR/bootstrap"
else
    log "no pid file in $DATA_DIR: broker not running"
fi

if ((PURGE)); then
    # Refuse obviously dangerous targets; the data dir is ours only if start.sh made it.
    case "$DATA_DIR" in
        / | "$HOME" | "$REPO_ROOT") die "refusing to purge $DATA_DIR" ;;
    esac
    if [[ -f "$CONFIG" || -d "$DATA_DIR/kraft" ]]; then
        rm -rf -- "$DATA_DIR"
        log "purged $DATA_DIR"
    else
        die "$DATA_DIR does not look like a start.sh data dir; not purging"
    fi
fi
