"""`evalproto perturb` and evalproto.perturb_dataset: Dynabench's fairness and robustness
copies of a dataset, equal to those of Dynabench's own script (tests/data/perturb), each
transform doing what it says, seeded, the copies' ids, answers and tags, the fields,
entities with and without spaCy, every bad input named, and the copies scored."""

from __future__ import annotations

import configparser
import difflib
import gzip
import importlib.machinery
import json
import os
import random
import re
import subprocess
import sys
import types
import unicodedata
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest
from conftest import DATA, json_rows, run_cli

import evalproto
from evalproto.perturb.names import GENDERS, gender_swap, given_names
from evalproto.perturb.transforms import spaced, unspaced

ROOT = Path(__file__).parent.parent
DEV = str(DATA / "perturb" / "dev.jsonl")
ROBUSTNESS = list(evalproto.PERTURBATIONS["robustness"])


def rows_of(path: str) -> List[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")]


ORIGINALS = {row["uid"]: row for row in rows_of(DEV)}


def copies(kind: str, seed: int = 5, **options) -> Dict[str, dict]:
    return {row["uid"]: row for row in evalproto.perturb_dataset(DEV, kind, seed=seed,
                                                                 **options)}


@pytest.fixture(scope="module")
def robust() -> Dict[str, dict]:
    return copies("robustness")


@pytest.fixture(autouse=True)
def no_spacy_pipeline(monkeypatch):
    """As on a machine without spaCy's pipeline, whatever this one has."""
    monkeypatch.setitem(sys.modules, "en_core_web_sm", None)


def write(path: Path, rows: List[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


# Dynabench's own copies


@pytest.mark.parametrize("kind", ["robustness", "fairness"])
def test_the_copies_are_those_of_dynabenchs_script(kind, robust):
    """tests/data/perturb/README.md says how Dynabench's script made its copies. Ours are
    the same, in the same order, but for the copies it writes that equal their originals
    (it compares texts before taking its own spaces out again)."""
    ours = robust if kind == "robustness" else copies(kind)
    theirs = rows_of(str(DATA / "perturb" / f"dev.{kind}.seed5.dynabench.jsonl"))
    left_out = [row["uid"] for row in theirs if row["uid"] not in ours]
    assert [row for row in theirs if row["uid"] in ours] == list(ours.values())
    assert left_out == ({"robustness": ["w5_ChangeCase", "w7_InsertPunctuationChars",
                                        "w7_InsertWhitespaceChars", "w7_InsertZeroWidthChars"],
                         "fairness": []}[kind])
    for uid in left_out:
        copy = next(row for row in theirs if row["uid"] == uid)
        assert {**copy, "uid": copy["input_id"]} == {**ORIGINALS[copy["input_id"]],
                                                     "input_id": copy["input_id"]}
    assert len(ours) == {"robustness": 349, "fairness": 10}[kind]


# each transform


def test_dynabenchs_processing_spaces_punctuation_and_takes_the_spaces_before_it_out():
    assert spaced("He didn't, 3.5-ish!") == "He didn ' t ,  3 . 5 - ish ! "
    assert unspaced(spaced("He didn't, 3.5-ish!")) == "He didn' t,  3. 5- ish!"
    assert unspaced(spaced("The cat sat.")) == "The cat sat."


def test_change_case_upper_cases_every_third_word(robust):
    assert robust["w1_ChangeCase"]["context"] == "JOHN told Mary THAT he would CALL his mother."
    assert robust["w1_ChangeCase"]["hypothesis"] == "MARY will call HER mother."
    assert "w5_ChangeCase" not in robust  # already upper case


def test_contractions_contract_every_pair_they_can(robust):
    assert robust["w3_Contractions"]["context"] == (
        "I'm sure that you're right: the king and the queen aren't here.")
    assert robust["w1_Contractions"]["context"] == "John told Mary that he'd call his mother."


@pytest.mark.parametrize("transform, inserted", [
    ("InsertZeroWidthChars", "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064"),
    ("InsertWhitespaceChars", " \t\n\r\v\f"),
    ("InsertPunctuationChars", ".?!,;:-'"),
])
def test_insertions_insert_their_characters_about_every_ten(robust, transform, inserted):
    for key, original in ORIGINALS.items():
        copy = robust.get(f"{key}_{transform}")
        if copy is None:
            assert len(original["context"]) < 10 and len(original["hypothesis"]) < 10
            continue
        for field in ("context", "hypothesis"):
            text, perturbed = original[field], copy[field]
            assert [c for c in perturbed if c not in inserted and not c.isspace()] == [
                c for c in text if c not in inserted and not c.isspace()], (key, field)
            if not inserted.isspace():  # whitespace is moved by the processing too
                added = sum(c in inserted for c in perturbed) - sum(c in inserted for c in text)
                assert 0 <= added <= 3 * (len(spaced(text)) // 10 + 1)  # "..." is one


def test_fun_fonts_write_whole_texts_in_one_font(robust):
    copy = robust["w3_ReplaceFunFonts"]["context"]
    assert copy != ORIGINALS["w3"]["context"] and not copy.isascii()
    assert unicodedata.normalize("NFKC", copy) == ORIGINALS["w3"]["context"]


def test_similar_unicode_replaces_letters_one_for_one(robust):
    copy, text = robust["w1_ReplaceSimilarUnicodeChars"]["context"], ORIGINALS["w1"]["context"]
    assert copy == "John toᏝd Mary that he ώould call hᎥs mother."
    assert len(copy) == len(text)
    assert all(ours == theirs or not ours.isascii() for ours, theirs in zip(copy, text))


def test_upside_down_turns_words_over(robust):
    assert robust["w1_ReplaceUpsideDown"]["context"] == (
        "John told ʎɹɐW that he would call his ɹǝɥʇoɯ ˙")


@pytest.mark.parametrize("transform", ["CharTypos", "KeyboardTypos", "MisspellingTypos"])
def test_typos_change_a_few_letters(robust, transform):
    made = 0
    for key, original in ORIGINALS.items():
        copy = robust.get(f"{key}_{transform}")
        if copy is None:
            continue
        for field in ("context", "hypothesis"):
            text = unspaced(spaced(original[field]))
            alike = difflib.SequenceMatcher(None, text, copy[field]).ratio()
            assert alike >= 0.7 or len(text) < 10, (text, copy[field])
            made += copy[field] != text
    assert made >= 20


def test_split_words_only_inserts_spaces(robust):
    for key, original in ORIGINALS.items():
        copy = robust[f"{key}_SplitWords"] if f"{key}_SplitWords" in robust else None
        if copy is None:
            continue
        for field in ("context", "hypothesis"):
            assert "".join(copy[field].split()) == "".join(original[field].split())
    assert robust["w1_SplitWords"]["context"] == "Jo hn told Mar y that he would call his mot her."


def test_every_robustness_transform_makes_copies(robust):
    made = {uid.split("_", 1)[1] for uid in robust}
    assert made == set(ROBUSTNESS) and len(ROBUSTNESS) == 12


# fairness


def test_the_names_are_common_given_names_shipped_with_the_package():
    male, female = (given_names(gender) for gender in GENDERS)
    assert len(male) >= 200 and len(female) >= 200
    assert not set(male) & set(female)
    assert {"John", "James", "Abraham"} <= set(male) and {"Mary", "Olivia"} <= set(female)
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config["options.package_data"]["evalproto.perturb"] == "data/*.txt"
    assert "evalproto.perturb" in config["options"]["packages"].split()


def test_each_name_is_swapped_for_one_of_the_other_gender_drawn_from_the_seed():
    male, female = (set(given_names(gender)) for gender in GENDERS)
    mapping = gender_swap(5)
    assert set(mapping) == male | female
    assert all((name in male) == (swapped in female) for name, swapped in mapping.items())
    assert gender_swap(5) == mapping and gender_swap(6) != mapping


def test_gendered_names_and_words_are_swapped():
    swap, fair = gender_swap(5), copies("fairness")
    assert fair["w1_SwapGenderedNamesAndWords"]["context"] == (
        f"{swap['John']} told {swap['Mary']} that she would call her father.")
    assert fair["w2_SwapGenderedNamesAndWords"]["context"] == (
        f"{swap['Abraham']} and her brother didn' t meet {swap['Olivia']} at the station; "
        f"he was late.")
    assert fair["w3_SwapGenderedNamesAndWords"]["context"] == (
        "I am sure that you are right: the queen and the king are not here.")
    assert fair["wmt22-35_SwapGenderedNamesAndWords"]["context"] == (
        "I need to contact my wife first.")
    assert "w8_SwapGenderedNamesAndWords" not in fair  # nothing gendered
    assert "wmt22-1_SwapGenderedNamesAndWords" not in fair


def test_the_words_of_entities_are_left_alone():
    found = []

    def entities(text: str) -> List[str]:
        found.append(text)
        return ["John Smith"] if "John" in text else []

    swap = gender_swap(5)
    fair = copies("fairness", entities=entities)
    assert fair["w1_SwapGenderedNamesAndWords"]["context"] == (
        f"John told {swap['Mary']} that she would call her father.")
    assert ORIGINALS["w1"]["context"] in found  # the original text, as Dynabench gives it
    robust = copies("robustness", entities=entities)
    assert found.count(ORIGINALS["w1"]["context"]) == 1 and len(robust) == 349


def fake_spacy(monkeypatch, load):
    """spaCy and its en_core_web_sm, as if installed, with `load` as spacy.load."""
    pipeline = types.ModuleType("en_core_web_sm")
    pipeline.__spec__ = importlib.machinery.ModuleSpec("en_core_web_sm", None)
    spacy = types.ModuleType("spacy")
    spacy.load = load
    monkeypatch.setitem(sys.modules, "en_core_web_sm", pipeline)
    monkeypatch.setitem(sys.modules, "spacy", spacy)


def test_an_installed_spacy_pipeline_finds_the_entities(monkeypatch):
    loaded = []

    def load(name):
        loaded.append(name)
        return lambda text: types.SimpleNamespace(ents=[
            types.SimpleNamespace(text=name) for name in ("Mary", "Abraham") if name in text])

    fake_spacy(monkeypatch, load)
    swap, fair = gender_swap(5), copies("fairness")
    assert loaded == ["en_core_web_sm"]
    assert fair["w1_SwapGenderedNamesAndWords"]["context"] == (
        f"{swap['John']} told Mary that she would call her father.")
    assert fair["w2_SwapGenderedNamesAndWords"]["context"].startswith("Abraham and her ")


def test_without_spacy_every_name_is_swapped():
    swap, fair = gender_swap(5), copies("fairness")
    assert fair["w1_SwapGenderedNamesAndWords"]["hypothesis"].startswith(swap["Mary"])
    assert fair["w4_SwapGenderedNamesAndWords"]["context"].startswith(swap["Patricia"])


def test_a_spacy_pipeline_that_does_not_load_is_an_error(monkeypatch, tmp_path):
    def load(name):
        raise OSError("[E050] Can't find model 'en_core_web_sm'")

    fake_spacy(monkeypatch, load)
    with pytest.raises(evalproto.SetupError, match=r"^spaCy's en_core_web_sm is installed but "
                       r"does not load \(\[E050\] Can't find model 'en_core_web_sm'\); "
                       r"reinstall it, or uninstall it to swap every name$"):
        evalproto.perturb_dataset(DEV, "fairness")


# seeds


def test_the_same_seed_gives_the_same_bytes_another_seed_others(tmp_path):
    paths = {name: str(tmp_path / f"{name}.jsonl") for name in ("a", "b", "c")}
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        done = run_cli("perturb", "--kind", "robustness", DEV, "-o", paths[name], "--seed", seed)
        assert done.exit_code == 0 and done.output == ""
    data = {name: Path(path).read_bytes() for name, path in paths.items()}
    assert data["a"] == data["b"] != data["c"]
    assert len(data["a"]) > 50_000


@pytest.mark.slow
def test_another_process_with_other_hashes_gives_the_same_bytes(tmp_path):
    """Nothing depends on the order of a set of strings, which differs by process."""
    code = "from evalproto.cli.launch import main\nmain()\n"
    outputs = []
    for hashes in ("1", "2"):
        output = tmp_path / f"fair-{hashes}.jsonl"
        subprocess.run([sys.executable, "-c", code, "perturb", "--kind", "fairness", DEV, "-o",
                        str(output), "--seed", "3"], check=True, timeout=120,
                       env={**os.environ, "PYTHONHASHSEED": hashes})
        outputs.append(output.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0] == run_cli("perturb", "--kind", "fairness", DEV, "-o", "-", "--seed",
                                 "3").output.encode("utf-8")


def test_the_callers_generators_and_nlpaug_are_left_as_they_were():
    from nlpaug.base_augmenter import Augmenter

    pooled = Augmenter.__dict__["_parallel_augment"]
    random.seed(42)
    np.random.seed(42)
    expected = random.random(), np.random.random()
    random.seed(42)
    np.random.seed(42)
    evalproto.perturb_dataset(DEV, "robustness", seed=9)
    assert (random.random(), np.random.random()) == expected
    assert Augmenter.__dict__["_parallel_augment"] is pooled


# the copies


def test_a_copy_keeps_the_answer_and_tags_and_names_its_original(robust):
    for uid, copy in robust.items():
        original = ORIGINALS[copy["input_id"]]
        assert uid == f"{copy['input_id']}_{uid.split('_', 1)[1]}"
        assert list(copy) == [*original, "input_id"]
        assert copy["answer"] == original["answer"]
        assert copy.get("tags") == original.get("tags")
        assert copy["context"] != original["context"] or copy["hypothesis"] != original[
            "hypothesis"]


def test_an_example_named_by_id_keeps_its_id_field(tmp_path):
    path = write(tmp_path / "ids.jsonl", [{"id": 7, "premise": "He is tall.", "answer": 1}])
    rows = evalproto.perturb_dataset(path, "fairness")
    assert rows == [{"id": "7_SwapGenderedNamesAndWords", "premise": "She is tall.",
                     "answer": 1, "input_id": 7}]


def test_by_default_every_string_field_but_the_id_and_answer_is_perturbed(tmp_path):
    path = write(tmp_path / "d.jsonl", [{"uid": "he", "id": "his", "answer": "he",
                                         "input_id": "he", "a": "he", "n": 3, "b": ["he"],
                                         "c": "his"}])
    (row,) = evalproto.perturb_dataset(path, "fairness")
    assert row == {"uid": "he_SwapGenderedNamesAndWords", "id": "his", "answer": "he",
                   "input_id": "he", "a": "she", "n": 3, "b": ["he"], "c": "her"}


def test_fields_choose_what_is_perturbed(tmp_path):
    output = tmp_path / "out.jsonl"
    done = run_cli("perturb", "--kind", "robustness", DEV, "-o", str(output), "--seed", "5",
                   "--fields", "hypothesis")
    assert done.exit_code == 0
    rows = rows_of(str(output))
    assert all(row["context"] == ORIGINALS[row["input_id"]]["context"] for row in rows)
    assert sum(row["hypothesis"] != ORIGINALS[row["input_id"]]["hypothesis"]
               for row in rows) >= 300
    answers = evalproto.perturb_dataset(DEV, "fairness", seed=5, fields=["answer"])
    assert answers == []  # entailment, neutral, contradiction: nothing gendered


def test_json_lines_in_and_out_as_every_command_reads_and_writes_them(tmp_path):
    packed = tmp_path / "dev.jsonl.gz"
    packed.write_bytes(gzip.compress(Path(DEV).read_bytes()))
    expected = run_cli("perturb", "--kind", "fairness", DEV, "-o", "-", "--seed", "5").output
    assert run_cli("perturb", "--kind", "fairness", str(packed), "-o", "-", "--seed",
                   "5").output == expected
    assert run_cli("perturb", "--kind", "fairness", "-", "-o", "-", "--seed", "5",
                   input=Path(DEV).read_text(encoding="utf-8")).output == expected
    assert [row["uid"] for row in json_rows(expected)][:2] == [
        "wmt22-14_SwapGenderedNamesAndWords", "wmt22-16_SwapGenderedNamesAndWords"]
    robust = run_cli("perturb", "--kind", "robustness", DEV, "-o", "-", "--seed", "5").output
    assert "ʎɹɐW" in robust and not re.search(r"\\u(?!00[01])", robust)  # UTF-8 text


def test_progress_is_reported_an_example_at_a_time():
    events = []

    class Recording:
        def start(self, label, total, unit=""):
            events.append(("start", label, total))
            return self

        def advance(self, count=1):
            events.append(("advance", count))

        def close(self):
            events.append(("close",))

    evalproto.perturb_dataset(DEV, "fairness", progress=Recording())
    assert events == [("start", "perturb: fairness", 32), *[("advance", 1)] * 32, ("close",)]


def test_a_perturbed_dataset_is_scored_as_any_dataset(tmp_path):
    output = tmp_path / "dev-robust.jsonl"
    assert run_cli("perturb", "--kind", "robustness", DEV, "-o", str(output)).exit_code == 0
    rows = rows_of(str(output))
    predictions = write(tmp_path / "pred.jsonl", [
        {"id": row["uid"], "pred": row["answer"] if number % 4 else "neutral"}
        for number, row in enumerate(rows)])
    done = run_cli("corpus-score", "--data-format", "dynabench", str(output), predictions,
                   "-m", "exact-match", "-f", "json")
    assert done.exit_code == 0, done.output
    right = sum(row["answer"] == ("neutral" if number % 4 == 0 else row["answer"])
                for number, row in enumerate(rows))
    scores = {result.get("group"): result["score"] for result in json_rows(done.output)}
    assert scores[None] == pytest.approx(100 * right / len(rows), abs=1e-12)
    assert "wmt22" in scores and "names" in scores


# bad input


@pytest.mark.parametrize("lines, message", [
    (['{"uid": "a", "context": "x"}', "{not json"], "line 2: not JSON"),
    (['{"context": "he"}'], "line 1: an example needs a 'uid' or an 'id'"),
    (['{"uid": "a", "context": "he"}', '{"uid": "a", "context": "she"}'],
     "line 2: duplicate example id 'a'"),
    (['["a"]'], "line 1: expected a JSON object"),
    (['{"uid": [1], "context": "he"}'], "line 1: an id must be a string or a whole number, "
                                        "found list"),
    ([""], "the dataset has no examples"),
])
def test_bad_datasets_are_named_by_file_and_line(tmp_path, lines, message):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "out.jsonl"
    done = run_cli("perturb", "--kind", "fairness", str(path), "-o", str(output))
    assert done.exit_code == 1
    assert done.output.startswith(f"Error: {path}: {message}") and done.output.count("\n") == 1
    assert not output.exists()


@pytest.mark.parametrize("fields, message", [
    ("context,premise", "line 1: no 'premise' field, which --fields names"),
    ("answer,tags", "line 2: 'tags' must be a string to be perturbed, found list"),
])
def test_a_named_field_that_a_row_lacks_is_named(tmp_path, fields, message):
    path = write(tmp_path / "d.jsonl", [{"uid": "a", "context": "he", "answer": "x",
                                         "tags": "t"},
                                        {"uid": "b", "context": "he", "answer": "x",
                                         "tags": ["t"]}])
    done = run_cli("perturb", "--kind", "robustness", path, "-o", "-", "--fields", fields)
    assert done.exit_code == 1
    assert done.output == f"Error: {path}: {message}\n"


@pytest.mark.parametrize("args, message", [
    (["--kind", "gender"], "Invalid value for '--kind': 'gender' is not one of 'robustness', "
                           "'fairness'"),
    (["--fields", "uid"], "--fields names 'uid', which identifies an example: it is not "
                          "perturbed"),
    (["--fields", "context,,hypothesis"], "--fields must name fields, not ''"),
    (["--fields", "context,context"], "--fields names 'context' twice"),
    (["--seed", "-1"], "Invalid value for '--seed'"),
    (["--seed", "x"], "Invalid value for '--seed'"),
    (["-o", DEV], f"{DEV}: the output is one of the command's inputs"),
])
def test_usage_errors_exit_2(args, message):
    base = {"--kind": "fairness", "-o": "-"}
    for option, value in zip(args[::2], args[1::2]):
        base[option] = value
    done = run_cli("perturb", *[part for pair in base.items() for part in pair], DEV)
    assert done.exit_code == 2
    assert message in done.output
    assert Path(DEV).read_text(encoding="utf-8").count("\n") == 32


def test_the_python_api_refuses_what_the_command_line_cannot_ask():
    for call, message in [
        (lambda: evalproto.perturb_dataset(DEV, "gender"),
         "`kind` must be one of robustness, fairness, not 'gender'"),
        (lambda: evalproto.perturb_dataset(DEV, "fairness", seed=-1),
         "`seed` must be a whole number >= 0, not -1"),
        (lambda: evalproto.perturb_dataset(DEV, "fairness", seed=True),
         "`seed` must be a whole number >= 0, not True"),
        (lambda: evalproto.perturb_dataset(DEV, "fairness", fields="context"),
         "`fields` must be a list of one or more field names"),
        (lambda: evalproto.perturb_dataset(DEV, "fairness", fields=[]),
         "`fields` must be a list of one or more field names"),
    ]:
        with pytest.raises(ValueError) as raised:
            call()
        assert isinstance(raised.value, evalproto.UsageProblem)
        assert str(raised.value) == message
    with pytest.raises(evalproto.InputError, match="no such file"):
        evalproto.perturb_dataset(str(DATA / "perturb" / "missing.jsonl"), "fairness")


# the extra


def run(*args: str, prelude: str = "") -> subprocess.CompletedProcess:
    code = f"{prelude}\nfrom evalproto.cli.launch import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("missing", ["augly", "nlpaug", "requests"])
def test_without_the_perturb_extra_the_command_says_how_to_install_it(missing):
    blocked = f"import sys\nsys.modules[{missing!r}] = None  # not installed"
    done = run("perturb", "--kind", "robustness", DEV, "-o", "-", prelude=blocked)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"Error: perturbing a dataset needs AugLy, the perturb extra "
                           f"({missing} is not installed): pip install 'evalproto[perturb]'\n")
    assert run("perturb", "--help", prelude=blocked).returncode == 0


def test_other_commands_never_import_augly_nor_spacy():
    report = ("import atexit, sys\natexit.register(lambda: print(sorted(name for name in "
              "('augly', 'nlpaug', 'spacy', 'evalproto.perturb') if name in sys.modules), "
              "file=sys.stderr))")
    done = run("corpus-score", str(DATA / "de-en.ref.A.en"), str(DATA / "de-en.hyp.LT22.en"),
               prelude=report)
    assert done.returncode == 0 and done.stderr == "[]\n"
    listed = run("--help", prelude=report)  # lists perturb: its module, not AugLy
    assert "  perturb " in listed.stdout and listed.stderr == "['evalproto.perturb']\n"


def test_the_test_extra_holds_the_perturb_extra():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extras = config["options.extras_require"]
    perturb = {line.strip() for line in extras["perturb"].splitlines() if line.strip()}
    assert "augly[text]>=1.0" in perturb
    assert perturb <= {line.strip() for line in extras["test"].splitlines()}
