# -*- coding: utf-8 -*-
# Output checks of the sglang_verify role: bounded quoting of model output for messages, the
# garbage detector and probe answer matching. Standard library only (runs on the GPU host with
# the probe module).
"""Checks of what the model answered."""

import json
import re


def quote(text, limit=160):
    """A bounded, unambiguous rendering of model output for messages."""
    if text is None:
        return "<none>"
    s = str(text)
    if len(s) > limit:
        s = s[:limit] + "...(%d chars)" % len(s)
    return json.dumps(s, ensure_ascii=False)


def detect_garbage(text, min_run=8, dominance=0.5):
    """Return a reason string when `text` looks like broken decoding, else None.

    - empty (or whitespace-only) output;
    - U+FFFD replacement characters (invalid bytes decoded);
    - one short unit (1-4 characters with something other than whitespace, e.g. "!" or
      "ab") repeated at least `min_run` times in a row and covering at least `dominance`
      of the output, e.g. "!!!!!!!!!!" or "the the the the ...";
    - one word repeated at least `min_run` times in a row, making up `dominance` of the words.
    """
    if text is None or not text.strip():
        return "empty output"
    if u"\ufffd" in text:
        return "replacement character U+FFFD in output"
    stripped = text.strip()
    total = len(stripped)
    best = None
    for width in (1, 2, 3, 4):
        pat = re.compile(r"((.{%d}))\2{%d,}" % (width, min_run - 1), re.S)
        for m in pat.finditer(stripped):
            unit = m.group(2)
            if not unit.strip():
                continue
            span = len(m.group(0))
            if best is None or span > best[1]:
                best = (unit, span)
    if best and best[1] >= dominance * total:
        return "the unit %s repeated %d times (%d%% of the output)" % (
            quote(best[0]), best[1] // len(best[0]), 100 * best[1] // total)
    words = stripped.split()
    run, best_run, best_word = 1, 1, None
    for i in range(1, len(words)):
        run = run + 1 if words[i] == words[i - 1] else 1
        if run > best_run:
            best_run, best_word = run, words[i]
    if best_run >= min_run and best_run >= dominance * len(words):
        return "the word %s repeated %d times in a row (%d of %d words)" % (
            quote(best_word), best_run, best_run, len(words))
    return None


def single_char_run(text, min_run=16, dominance=0.5):
    """A reason when one non-space character repeated at least ``min_run`` times in a row makes
    up ``dominance`` of the output (the ``!!!!`` of a broken kernel), else None. The one garbage
    rule that holds for any input, random token ids included."""
    stripped = (text or "").strip()
    best = max((m.group(0) for m in re.finditer(r"(\S)\1{%d,}" % (min_run - 1), stripped)), key=len, default="")
    if best and len(best) >= dominance * len(stripped):
        return "the character %s repeated %d times (%d%% of the output)" % (
            quote(best[0]), len(best), 100 * len(best) // len(stripped))
    return None


def answer_problem(text, asked=None, got=None, finish_reason=None, min_run=8, text_prompt=True):
    """Why one benchmark answer is no answer, or None: empty; far shorter than asked (under half
    the tokens) without a stop; garbage by detect_garbage() where the prompt was text, or, for
    prompts of random token ids (sglang.benchmark.serving's random-ids), whose answers are
    rambling by nature, only a run of one character."""
    if text is None or not str(text).strip():
        return "empty output"
    if asked and got is not None and got < asked / 2.0 and finish_reason != "stop":
        return "%d tokens of the %d asked, finish_reason %s" % (got, asked, quote(finish_reason))
    return detect_garbage(text, min_run) if text_prompt else single_char_run(text, max(2 * min_run, 16))


def answers_check(what, answers, **kw):
    """[] or one failure naming how many of ``answers`` (dicts of text, asked, got,
    finish_reason) are no answer, quoting the first: a benchmark of garbage fails whatever its
    speed."""
    bad = [(a, answer_problem(a.get("text"), a.get("asked"), a.get("got"), a.get("finish_reason"), **kw))
           for a in answers]
    bad = [(a, why) for a, why in bad if why]
    if not bad:
        return []
    return ["%s: %d of %d answers are garbage (%s): %s" % (
        what, len(bad), len(answers), bad[0][1], quote(bad[0][0].get("text")))]


def match_answer(output, expect, match="contains"):
    """Does the model's answer satisfy the probe? exact compares stripped text,
    contains is case-insensitive, regex uses re.search."""
    if output is None:
        return False
    if match == "exact":
        return output.strip() == str(expect).strip()
    if match == "contains":
        return str(expect).lower() in output.lower()
    if match == "regex":
        return re.search(str(expect), output) is not None
    raise ValueError("unknown match mode %r" % match)
