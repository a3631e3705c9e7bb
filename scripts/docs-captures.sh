#!/usr/bin/env bash
# Regenerate the pictures of `pyspark-incr status` shown in docs/cli.md:
#   docs/img/status.txt    the terminal, as tmux capture-pane sees it (120x30, plain text)
#   docs/img/status.json   the CALL incr.status rows it was drawn from (tests/test_cli_status.py redraws them)
#   docs/img/coverage.png  the same coverage written by `status --png`
#
# The quickstart is built in a throw-away home at fixed execution times, so the pictures only change when
# the code drawing them does: apply up to 2024-01-08, the daily run of 2024-01-09, then a run limited to
# 2024-01-15..20 on 2024-01-25, which leaves a gap on either side of it.
# Without tmux the terminal text is written by the same command with COLUMNS=120 instead.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CLI="$ROOT/.venv/bin/pyspark-incr"
PY="$ROOT/.venv/bin/python"
IMG="$ROOT/docs/img"
AT="2024-01-25 06:00:00"
WIDTH=120 HEIGHT=30
HOME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pyspark-incr-docs.XXXXXX")
SOCKET="pyspark-incr-docs-$$"
cleanup() {
  tmux -L "$SOCKET" kill-server 2>/dev/null || true
  rm -rf "$HOME_DIR"
}
trap cleanup EXIT
# keep the log of a failed run: cleanup removes the home
trap 'echo "failed; last lines of the log:" >&2; tail -n 30 "$LOG" >&2' ERR
mkdir -p "$IMG"
LOG="$HOME_DIR/captures.log"

echo "building the quickstart in $HOME_DIR (log: $LOG)"
"$CLI" --home "$HOME_DIR/incr" demo >>"$LOG" 2>&1
"$CLI" --home "$HOME_DIR/incr" run --start 2024-01-15 --end 2024-01-20 --execution-time "$AT" >>"$LOG" 2>&1

STATUS=("$CLI" --home "$HOME_DIR/incr" status --execution-time "$AT" --json "$IMG/status.json")
if command -v tmux >/dev/null 2>&1; then
  echo "capturing pyspark-incr status in a ${WIDTH}x${HEIGHT} tmux pane"
  # the pane keeps its text after the command (read waits on the terminal) until the server is killed
  printf -v command '%q ' env -u COLUMNS -u LINES "${STATUS[@]}"
  tmux -L "$SOCKET" -f /dev/null new-session -d -s docs -x "$WIDTH" -y "$HEIGHT" \
    "cd $(printf %q "$ROOT") && $command 2>>$(printf %q "$LOG"); echo \$? >$(printf %q "$HOME_DIR/rc"); tmux -L $SOCKET wait-for -S done; read"
  tmux -L "$SOCKET" wait-for done
  if [ "$(cat "$HOME_DIR/rc")" != 0 ]; then
    tmux -L "$SOCKET" capture-pane -p -t docs >&2
    echo "pyspark-incr status failed; see $LOG" >&2
    exit 1
  fi
  tmux -L "$SOCKET" capture-pane -p -t docs | sed -e 's/[[:space:]]*$//' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' \
    >"$IMG/status.txt"
  tmux -L "$SOCKET" kill-server
else
  echo "tmux not found: writing the terminal text with COLUMNS=$WIDTH instead of a pane capture"
  COLUMNS=$WIDTH "${STATUS[@]}" 2>>"$LOG" | sed -e 's/[[:space:]]*$//' >"$IMG/status.txt"
fi

echo "drawing docs/img/coverage.png"
"$PY" -m pyspark_incr.cli_status "$IMG/status.json" "$IMG/coverage.png"
echo "wrote docs/img/status.txt, docs/img/status.json, docs/img/coverage.png"
