"""``specdec serve``: the OpenAI-compatible server (see :mod:`specdec.server`)."""

from __future__ import annotations

import argparse
import os

from specdec.cli.generate import COMPILE_HELP
from specdec.errors import InvalidArgumentError
from specdec.inputs import non_negative_int, positive_int


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default="smollm2-135m", help="the target (a built-in name, folder or GGUF)"
    )
    parser.add_argument(
        "--drafter",
        action="append",
        default=None,
        help="a drafter spec, as for generate (none: plain decoding); repeat it to serve several, which "
        "requests choose by spec in speculative.drafter (the first is the default)",
    )
    parser.add_argument("--gamma", default="adaptive", help="draft length: an int, 'adaptive' or 'heuristic'")
    parser.add_argument(
        "--bild",
        nargs=2,
        type=float,
        metavar=("FALLBACK", "ROLLBACK"),
        default=None,
        help="serve BiLD with these thresholds instead of lossless SpS (not lossless)",
    )
    parser.add_argument("--compile", action="store_true", help=COMPILE_HELP)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--api-key",
        default=os.environ.get("SPECDEC_API_KEY"),
        help="require 'Authorization: Bearer KEY' (default: $SPECDEC_API_KEY; none: open)",
    )
    parser.add_argument(
        "--max-batch", type=positive_int, default=32, help="sequences decoded together, at most"
    )
    parser.add_argument(
        "--max-waiting", type=non_negative_int, default=256, help="queued sequences before 429"
    )
    parser.add_argument("--max-body-bytes", type=positive_int, default=1 << 20)
    parser.add_argument(
        "--served-model-name", default=None, help="the model id clients send (default: --model)"
    )
    parser.add_argument("--cache-dir", default=None)


def run_serve(args: argparse.Namespace) -> None:
    try:
        import uvicorn

        from specdec.server import build_app
    except ImportError as err:
        raise InvalidArgumentError(
            f"specdec serve needs the 'serve' extra: pip install 'specdec[serve]' ({err})"
        ) from err
    from specdec.decoders import BiLD, SpeculativeSampling
    from specdec.drafters import make_drafter
    from specdec.models import load_model

    loaded = load_model(args.model, cache_dir=args.cache_dir)
    specs = list(dict.fromkeys(args.drafter or []))
    drafter = {spec: make_drafter(spec, loaded.model, loaded.tokenizer) for spec in specs} or None
    method = None
    if drafter is not None:
        method = BiLD(*args.bild) if args.bild else SpeculativeSampling(args.gamma)
    app = build_app(
        loaded.model,
        loaded.tokenizer,
        drafter=drafter,
        method=method,
        model_name=args.served_model_name or args.model,
        api_key=args.api_key,
        max_batch=args.max_batch,
        max_waiting=args.max_waiting,
        max_body_bytes=args.max_body_bytes,
        compile=args.compile,
    )
    uvicorn.run(app, host=args.host, port=args.port, timeout_graceful_shutdown=30)
