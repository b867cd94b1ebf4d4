# Shared by the single-run bench scripts (source it): one run from the worktree /work/bench-tree, with the main
# checkout's virtual environment, jemalloc at its default decay (`dirty_decay_ms:-1` grew a sweep over many prompt
# lengths until it ran out of memory: bench-2026-11-24d-bild50.sh) and the worktree's own sources.

# bench_tree COMMIT LABEL: move /work/bench-tree to COMMIT, work there, and print the run's opening log line.
bench_tree() {
  source /work/main/.venv/bin/activate
  export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
  unset MALLOC_CONF
  git -C /work/bench-tree checkout -q --detach "$1"
  cd /work/bench-tree
  export PYTHONPATH=/work/bench-tree/src
  echo "== $2 $(date -Is) $(lscpu | grep 'Model name') commit $1"
}
