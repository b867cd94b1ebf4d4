#!/bin/bash
# serve --compile's cold start (thirty-fourth session, CAMPAIGN.md next run 6): serve-compile-check-2026-11-27j.sh with
# an empty inductor cache (TORCHINDUCTOR_CACHE_DIR a fresh folder), so the time to healthy includes compiling every
# graph the warm-up builds, as on a fresh machine; then one request and two at once, each text against eager plain
# decoding. From /work/bench-tree at the commit to check.
TORCHINDUCTOR_CACHE_DIR=$(mktemp -d /tmp/inductor-cold.XXXX)
export TORCHINDUCTOR_CACHE_DIR
echo "== $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/bench-tree rev-parse --short HEAD)"
exec "$(dirname "$0")/serve-compile-check-2026-11-27j.sh"
