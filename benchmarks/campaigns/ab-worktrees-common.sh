# Shared by the old-against-new A/B scripts (source it): each commit in its own worktree, /work/bench-old and
# /work/bench-new, made on first use and moved to the commit on every run.

# ab_worktrees OLD NEW: check out OLD in /work/bench-old and NEW in /work/bench-new; exits on failure.
ab_worktrees() {
  local tree commit
  for tree in old new; do
    commit=$1; [ $tree = new ] && commit=$2
    [ -d /work/bench-$tree ] || git -C /work/main worktree add -q --detach /work/bench-$tree "$commit" || exit 1
    git -C /work/bench-$tree checkout -q --detach "$commit" || exit 1
  done
}

# ab_banner TREE ROUND: the log line opening one run (time, CPU, the tree's commit).
ab_banner() {
  echo "== $1 round $2 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/bench-$1 rev-parse --short HEAD)"
}
