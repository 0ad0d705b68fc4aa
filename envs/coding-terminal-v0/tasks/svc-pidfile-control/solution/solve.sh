#!/bin/bash
set -euo pipefail
cat > /app/bin/svcctl <<'SH'
#!/bin/bash
# svcctl: start/stop/status/restart for echo_server.py
# Environment: SVC_PORT (default 8099), SVC_RUN_DIR (default /app/run) holding echo.pid and echo.log
RUN_DIR=${SVC_RUN_DIR:-/app/run}
PIDFILE="$RUN_DIR/echo.pid"
LOG="$RUN_DIR/echo.log"
PORT=${SVC_PORT:-8099}
SERVER=/app/bin/echo_server.py

alive() {  # a live, non-zombie process
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
is_ours() {
    alive "$1" && tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | grep -q 'echo_server\.py$'
}
read_pid() {
    local p
    [ -f "$PIDFILE" ] || return 1
    p=$(head -n1 "$PIDFILE" 2>/dev/null | tr -dc '0-9')
    [ -n "$p" ] && echo "$p"
}
running_pid() {
    local p
    p=$(read_pid) && is_ours "$p" && echo "$p"
}

start() {
    local pid i
    mkdir -p "$RUN_DIR" || return 1
    if pid=$(running_pid); then
        echo "already running (pid $pid)"
        return 0
    fi
    rm -f "$PIDFILE"
    setsid nohup python3 "$SERVER" --port "$PORT" >> "$LOG" 2>&1 < /dev/null &
    pid=$!
    echo "$pid" > "$PIDFILE"
    for i in $(seq 50); do
        if ! alive "$pid"; then
            break
        fi
        if is_ours "$pid" && grep -q "^echo_server pid $pid listening" "$LOG" 2>/dev/null; then
            echo "started (pid $pid)"
            return 0
        fi
        sleep 0.1
    done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null
    rm -f "$PIDFILE"
    echo "failed to start, see $LOG" >&2
    return 1
}

stop() {
    local pid i
    if pid=$(running_pid); then
        kill -TERM "$pid" 2>/dev/null
        for i in $(seq 100); do
            alive "$pid" || break
            sleep 0.1
        done
        if alive "$pid"; then
            kill -KILL "$pid" 2>/dev/null
            while alive "$pid"; do sleep 0.1; done
        fi
    fi
    rm -f "$PIDFILE"
    echo "stopped"
    return 0
}

status() {
    local pid
    if pid=$(running_pid); then
        echo "running (pid $pid)"
        return 0
    elif [ -f "$PIDFILE" ]; then
        echo "stale pid file"
        return 1
    fi
    echo "stopped"
    return 3
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    restart) stop >/dev/null; start ;;
    *) echo "usage: $0 start|stop|status|restart" >&2; exit 2 ;;
esac
SH
