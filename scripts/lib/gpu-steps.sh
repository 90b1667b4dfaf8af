# scripts/lib/gpu-steps.sh: the verdict lines of the scripts that run on the GPU machine (gpu-run,
# gpu-window). Source it after setting $summary (the summary file); `failed` becomes 1 when a step fails.
failed=0
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
