"""Session 2026-12-01 (fifty-ninth), issue 20: keep the target's answers of answer-cache files without their
prompts, for the commit (`specdec data answers --answers-from DEST` rebuilds the cache files from them and the
prompts' own source, checked against the digests recorded here).

    .venv/bin/python benchmarks/campaigns/export-answer-ids-2026-12-01.py DEST CACHE_FILE...
"""

import sys
from pathlib import Path

from specdec.training.answers import export_answer_ids, read_complete

dest, files = Path(sys.argv[1]), [Path(f) for f in sys.argv[2:]]
for file in files:
    rows = read_complete(file)
    out = export_answer_ids(file, dest)
    tokens = sum(len(r.answer_ids) for r in rows)
    print(f"{file.name}: {len(rows)} answers, {tokens} answer tokens -> {out} ({out.stat().st_size:,} bytes)")
