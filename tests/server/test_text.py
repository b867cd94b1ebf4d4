"""Streaming text with stop strings: nothing of a stop string, not even its first characters, is ever sent."""

from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.server.text import TextStream
from tiny import make_tokenizer

TOKENIZER = make_tokenizer()
TEXT = "the quick brown fox jumps over the lazy dog. speculative decoding drafts several tokens"
IDS = TOKENIZER.encode(TEXT)


def stream_all(stops, ids, chunk: int) -> tuple[list[str], TextStream]:
    stream = TextStream(TOKENIZER.decode, stops)
    sent = [stream.push(ids[i : i + chunk]) for i in range(0, len(ids), chunk)]
    sent.append(stream.push([], final=True))
    return sent, stream


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(TEXT) - 2), st.integers(1, 6), st.integers(1, 4))
def test_the_sent_text_is_the_text_before_the_first_stop(start, length, chunk):
    stop = TEXT[start : start + length]
    sent, stream = stream_all([stop], IDS, chunk)
    expected = TEXT[: TEXT.find(stop)]
    assert "".join(sent) == stream.text == expected
    for i in range(1, len(sent) + 1):  # at no point did the client hold a stop's beginning past its end
        assert stop not in "".join(sent[:i])


def test_the_beginning_of_a_stop_is_held_back_until_the_text_decides():
    stream = TextStream(TOKENIZER.decode, ["lazy cat"])
    first = stream.push(TOKENIZER.encode("over the la"))
    assert first == "over the "  # "la" could begin "lazy cat"
    assert stream.push(TOKENIZER.encode("zy dog")) == "lazy dog"  # it did not: released
    assert stream.push([], final=True) == ""


def test_without_stops_everything_is_sent_as_it_comes():
    sent, stream = stream_all([], IDS, 3)
    assert stream.text == TEXT
    assert "".join(sent[:-1]) == TEXT and sent[-1] == ""


def test_negative_control_a_stream_not_told_the_stop_sends_it():
    sent, _ = stream_all([], IDS, 2)
    assert "lazy" in "".join(sent)  # the comparison above can see a stop that leaks
