"""A small version of the load test (benchmarks: ``specdec bench server``): concurrent streaming requests
with mixed lengths and sampling settings all complete, and each equals the same request sent alone."""

import asyncio

from specdec.benchmarks.server_load import burst, request_mix


def test_concurrent_streams_all_complete_and_none_is_mixed_with_another(url):
    result = asyncio.run(burst(url, request_mix(24, seed=1), pid=None))
    assert result["streams"] == 24 and result["failed"] == 0, result["errors"]
    assert result["differ_from_alone"] == 0
