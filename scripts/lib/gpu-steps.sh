# scripts/lib/gpu-steps.sh: what the scripts that run on the GPU machine (gpu-run, gpu-window) share:
# unpacking the carried packages, a private XDG_RUNTIME_DIR, and the verdict lines. Source it after
# setting $summary (the summary file); `failed` becomes 1 when a step fails.
failed=0
made_xdg=""  # the XDG_RUNTIME_DIR use_runtime_dir made (the caller removes it at exit), or empty

# unpack_debs DIR: unpacks every package in DIR into / (the GPU machine has no package access).
unpack_debs() {
  local deb
  for deb in "$1"/*.deb; do [ -e "$deb" ] && dpkg -x "$deb" /; done
  ldconfig
}

# use_runtime_dir: ipc sockets by name live in $XDG_RUNTIME_DIR/membridge; the GPU machine may not set
# it: then a private one is made (in $made_xdg) and exported.
use_runtime_dir() {
  if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
    made_xdg=$(mktemp -d /tmp/membridge-xdg-XXXXXX)
    export XDG_RUNTIME_DIR=$made_xdg
  fi
}
# note TEXT...: prints TEXT and appends it to the summary.
note() { echo "$*" | tee -a "$summary"; }
# step NAME LIMIT_S LOG CMD...: runs CMD with a time limit, output to LOG, and records the verdict.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local t0=$(date +%s) rc
  timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || failed=1
  note "$(printf '%-34s %s (exit %d, %d s)' "$name" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" $rc $(( $(date +%s) - t0 )))"
  return 0
}
