"""Every benchmark answer is an answer (plugins/module_utils/verify/output.py:
answer_problem, single_char_run, answers_check): empty, cut short without a stop, garbage by
the detector where the prompt is text, and for the random token ids of
sglang.benchmark.serving only a run of one character, so that rambling answers to random input
pass. The rambling answers below are the tiny model's real ones to sglang.benchmark.serving's
random-ids prompts on the demo hosts (128 tokens each, the first 80 characters kept)."""

from ansible_collections.sglang.deploy.plugins.module_utils.verify import output as out
from ansible_collections.sglang.deploy.plugins.module_utils.verify.stats import bench_serving_answers

RANDOM_IDS_ANSWERS = [
    "# + other - other - other - other - other - other - other - other - other - othe",
    "# 4 |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |",
    "# Generics are regenerics. GenericAlias\n# Generics are regenerics. \\no()\n# Gener",
    "issages a list of the sumes. GEXXXXXXXXXXXXXX_values()\nimportError(self, '\n     ",
]


def test_rambling_answers_to_random_token_ids_are_answers_and_a_run_of_bangs_is_not():
    for text in RANDOM_IDS_ANSWERS:
        assert out.answer_problem(text, 128, 128, text_prompt=False) is None, text
    # the text rules would call two of them garbage: they are for text prompts only
    assert out.answer_problem(RANDOM_IDS_ANSWERS[1], text_prompt=True)
    bangs = "Once" + "!" * 120
    assert out.answer_problem(bangs, 128, 128, text_prompt=False).startswith('the character "!" repeated 120 times')
    assert out.single_char_run("ab" + "!" * 15) is None  # under 16 in a row
    # the longest run decides, and it must cover half of the output
    assert out.single_char_run("x" * 20 + "y" * 30).startswith('the character "y" repeated 30 times (60%')
    assert out.single_char_run("x" * 20 + "y" * 18 + "z" * 30) is None


def test_empty_and_cut_short_answers():
    assert out.answer_problem("", 128, 0) == "empty output"
    assert out.answer_problem("   \n", text_prompt=False) == "empty output"
    assert out.answer_problem("A short tale.", 256, 40, "length") == '40 tokens of the 256 asked, finish_reason "length"'
    assert out.answer_problem("A short tale.", 256, 40, "stop") is None  # the model ended it
    assert out.answer_problem("A tale of a keeper and his light.", 256, 200, None) is None


def test_answers_check_counts_and_quotes_the_first_bad_answer():
    answers = [{"text": "A keeper kept the light burning.", "asked": 16, "got": 16},
               {"text": "!" * 40, "asked": 16, "got": 16}, {"text": "", "asked": 16, "got": 16}]
    failures = out.answers_check("concurrency sweep at 4", answers)
    assert failures == ['concurrency sweep at 4: 2 of 3 answers are garbage (the unit "!" repeated 40 times '
                        '(100% of the output)): "' + "!" * 40 + '"']
    assert out.answers_check("x", answers[:1]) == []


def test_bench_serving_answers_read_the_details_of_its_last_record():
    text = ('{"completed": 2}\n'
            '{"completed": 2, "generated_texts": ["a b", "!!!!"], "output_lens": [128, 3]}\n')
    assert bench_serving_answers(text) == [("a b", 128), ("!!!!", 3)]
    assert bench_serving_answers('{"completed": 2}') == []
