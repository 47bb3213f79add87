"""OpenClaw's curated memory (MEMORY.md, USER.md) as memindex indexes and ranks it
(parity b): entries as chunks, recall annotations read as OpenClaw's SDK reads them,
importance and the session's repositories in the order, ``memory_curated`` for
OpenClaw's deterministic recall lane."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import write
from openclaw_home import NODE, OPENCLAW, PLUGIN, require_openclaw

from indexer.api import CuratedRequest
from indexer.config import Config
from indexer.engine import AgentIndex
from indexer.search.curated_entries import curated_entries
from indexer.sources.curated import curated_chunks, meta_of, strip_annotations

CASES = [
    ("MEMORY.md", "- Keep the gateway on loopback. <!-- trigger: gateway setup, network "
                  "safety --> <!-- importance: 9 -->"),
    ("MEMORY.md", "- x <!-- trigger: foo --> trailing"),
    ("MEMORY.md", "- x <!-- trigger: foo --> text <!-- importance: 5 -->"),
    ("MEMORY.md", "- entry\n  continued <!-- TRIGGER: a; b , c;; a -->"),
    ("MEMORY.md", "- spans <!-- trigger: one\ntwo -->"),
    ("MEMORY.md", "- imp <!-- importance: 0 --> <!-- importance: 11 --> <!-- importance: 7.5 -->"),
    ("MEMORY.md", "- imp <!-- importance: 08 --> <!-- importance: 3 -->"),
    ("MEMORY.md", "- p <!-- project: GitHub.com/Org/Repo --> more"),
    ("MEMORY.md", "- p <!-- project: path:/tmp/a%3bb; github.com/c/d -->"),
    ("MEMORY.md", "- p <!-- project: -->"),
    ("MEMORY.md", "- p <!-- project: a/b; -->"),
    ("MEMORY.md", "- p <!-- project: a/b"),
    ("USER.md", "- u <!-- project: github.com/a/b --> <!-- importance: 4 -->"),
    ("memory/2026-01-01.md", "- d <!-- trigger: x --> <!-- project: github.com/a/b -->"),
    ("MEMORY.md", "- a <!-- trigger: x --> mid  \n- b <!-- importance: 3 -->   \n"
                  "<!-- note: kept -->"),
    ("MEMORY.md", "no annotations at all"),
]  # fmt: skip


def test_annotations_are_read_as_openclaws_sdk_reads_them() -> None:
    require_openclaw()
    sdk = OPENCLAW.parent / "dist/plugin-sdk"
    r = subprocess.run(
        [str(NODE), "scripts/curated-parity.mjs", str(sdk)],
        input=json.dumps([{"path": p, "text": t} for p, t in CASES]),
        cwd=PLUGIN, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    theirs = json.loads(r.stdout)
    for (path, text), want in zip(CASES, theirs, strict=True):
        meta = meta_of(path, text)
        mine = {"importance": meta.importance, "triggers": meta.triggers,
                "projectKey": meta.project_key, "stripped": strip_annotations(text)}  # fmt: skip
        assert mine == want, (path, text)


@pytest.fixture
def idx(tmp_path: Path) -> AgentIndex:
    ws = tmp_path / "ws"
    write(
        ws,
        "MEMORY.md",
        "# Memory\n\n"
        "- The ferry code, written first, is FERRY-1. <!-- importance: 1 -->\n"
        "- The ferry code, written later, is FERRY-9. <!-- importance: 9 -->"
        " <!-- trigger: ferry booking -->\n"
        "  a continuation line of the same entry\n"
        "- Build the ferry app with make. <!-- project: github.com/a/alpha -->\n"
        "- Build the ferry app with cargo. <!-- project: github.com/b/beta -->\n"
        "- A ferry note whose annotation is broken <!-- project: -->\n",
    )
    write(
        ws,
        "USER.md",
        "# User\n\n- Always answer about the ferry in metric. <!-- importance: 6 -->\n",
    )
    return AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite"))


def test_a_heading_is_in_its_entries_path_not_a_chunk() -> None:
    """A heading with entries (or a deeper section) under it is not a hit of its own
    ("people" finds Dana's entry, not "## People"); an empty section's heading, or
    one carrying an annotation, is kept (it may be all that was written)."""
    text = ("# Memory\n\n## People\n- Dana likes rye.\n  (sourdough too)\n\n### Family\n"
            "- Priya in Lisbon.\n## Todo: call the dentist\n## Rules <!-- importance: 9 -->\n"
            "- Loopback only.\n## Last\n")  # fmt: skip
    got = curated_chunks(text, lambda xs: [len(x.split()) for x in xs], tokens=400, overlap=80)
    assert [(c.start_line, c.end_line, c.heading) for c in got] == [
        (4, 5, "Memory > People"),
        (8, 8, "Memory > People > Family"),
        (9, 9, "Memory > Todo: call the dentist"),
        (10, 10, "Memory > Rules"),
        (11, 11, "Memory > Rules"),
        (12, 12, "Memory > Last"),
    ]


def test_entries_rank_by_importance_and_show_their_signals(idx: AgentIndex) -> None:
    with idx:
        idx.sync()
        res = idx.search("ferry code", min_score=0)["results"]
        first, second = res[0], res[1]
        assert (first["startLine"], first["endLine"]) == (4, 5)  # the entry, continuation too
        assert first["importance"] == 9 and first["triggers"] == "ferry booking"
        assert "<!--" not in first["snippet"] and "FERRY-9" in first["snippet"]
        assert second["importance"] == 1
        paths = [(r["path"], r["startLine"]) for r in idx.search("ferry", min_score=0)["results"]]
        assert ("MEMORY.md", 8) not in paths  # a malformed project annotation: never shown
        assert idx.search("booking", min_score=0)["results"] == []  # annotations not indexed


def test_the_sessions_repositories_rank_first(idx: AgentIndex) -> None:
    from indexer.api import SearchRequest

    with idx:
        idx.sync()
        s = idx.searcher
        for active, first in (("github.com/a/alpha", "make"), ("github.com/b/beta", "cargo")):
            req = SearchRequest("build the ferry app", min_score=0, active_projects=(active,))
            top = s.search(req)["results"][0]
            assert first in top["snippet"] and top["projectKey"] == active


def test_memory_curated_lists_trigger_and_project_entries(idx: AgentIndex) -> None:
    cfg = idx.cfg
    got = curated_entries(cfg, CuratedRequest("triggers"))["results"]
    assert [(e["path"], e["startLine"], e["triggers"]) for e in got] == [
        ("MEMORY.md", 4, "ferry booking")
    ]
    assert got[0]["importance"] == 9 and "<!--" not in got[0]["snippet"]
    alpha = curated_entries(cfg, CuratedRequest("projects", ("github.com/a/alpha",)))["results"]
    assert [e["startLine"] for e in alpha] == [6]
    assert curated_entries(cfg, CuratedRequest("projects"))["results"] == []


def test_the_newer_of_two_notes_of_the_same_fact_comes_first(tmp_path: Path) -> None:
    """Supersession: the older statement ranks higher on its words, the newer is
    shown first and the older names it; an old note that alone answers keeps its
    place (no blanket decay)."""
    ws = tmp_path / "ws"
    write(ws, "memory/2025-03-01.md", "# 2025-03-01\n\n- The ferry ticket code is FERRY-1111 "
          "for the island trip.\n- The dentist is Dr. Okafor.\n")  # fmt: skip
    write(ws, "memory/2026-11-26.md", "# 2026-11-26\n\n- A long day with many errands and "
          "notes about nothing much.\n- The ferry ticket code is FERRY-9999 now.\n")  # fmt: skip
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
        idx.sync()
        res = idx.search("what is the ferry ticket code", min_score=0, explain=True)["results"]
        assert [r["path"] for r in res] == ["memory/2026-11-26.md", "memory/2025-03-01.md"]
        # ranked lower on its words, shown first, scoring as the one it supersedes
        assert res[0]["textScore"] < res[1]["textScore"] and res[0]["score"] == res[1]["score"]
        assert res[1]["explain"]["supersededBy"] == res[0]["citation"]
        assert res[0]["explain"]["supersedes"] == res[1]["citation"]
        old = idx.search("who is the dentist", min_score=0)["results"]
        assert old[0]["path"] == "memory/2025-03-01.md"


def test_a_later_note_announcing_a_change_comes_before_the_curated_one(
    tmp_path: Path,
) -> None:
    """MEMORY.md says who the vet is; a later daily log says there is a new vet, in
    other words. The log is shown first, the curated entry names it; a log that
    says something new about something else, and a transcript, keep their places."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- Dog: Pepper, vet is Dr. Halvorsen at Winslow Animal "
          "Clinic, Pepper's vet since 2022.\n- Mom's phone is 509-555-0148.\n")  # fmt: skip
    write(ws, "memory/2026-11-12.md", "# 2026-11-12\n\n- Pepper has a new vet: Dr. Osei, "
          "because Dr. Halvorsen retires.\n")  # fmt: skip
    write(ws, "memory/2026-11-13.md", "# 2026-11-13\n\n- Mom got a new car.\n")
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
        idx.sync()
        res = idx.search("Who is Pepper's vet?", min_score=0, explain=True)["results"]
        assert [r["path"] for r in res] == ["memory/2026-11-12.md", "MEMORY.md"]
        assert res[1]["explain"]["supersededBy"] == res[0]["citation"]
        phone = idx.search("What's Mom's phone number?", min_score=0)["results"]
        assert phone[0]["path"] == "MEMORY.md"  # a new car says nothing of the phone


def test_a_later_note_announcing_a_change_is_found_below_the_shown_results(
    tmp_path: Path,
) -> None:
    """The curated entry and the logs that repeat its words fill the results; the log
    that moved the lesson ranks below them on its words. It is shown, above the
    entry, in the last result's place; a log naming only Elin beside a word of change
    is no announcement of the lesson's change."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- Elin's swimming lessons: Tuesdays 17:00.\n")
    for day in ("2026-10-06", "2026-10-13", "2026-10-20"):
        write(ws, f"memory/{day}.md", f"# {day}\n\n- Took Elin to swimming; the lesson "
              "went well, two lengths of the pool.\n")  # fmt: skip
    write(ws, "memory/2026-11-02.md", "# 2026-11-02\n\n- Elin has a new library card.\n")
    write(ws, "memory/2026-11-03.md", "# 2026-11-03\n\n- Long review of the signal plans "
          "with the team, notes sent round, and a budget check for next year.\n"
          "- The pool changed its timetable: Elin's swimming moves to Thursdays.\n")  # fmt: skip
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
        idx.sync()
        q = "Which day is Elin's swimming lesson?"
        full = idx.search(q, max_results=10, min_score=0, mode="keyword")["results"]
        paths = [r["path"] for r in full]
        assert paths[0] == "memory/2026-11-03.md" and paths[1] == "MEMORY.md"
        by_words = [r["path"] for r in sorted(full, key=lambda r: -r["textScore"])]
        assert by_words[:4] == ["MEMORY.md"] + [
            f"memory/{day}.md" for day in ("2026-10-06", "2026-10-13", "2026-10-20")
        ]  # on its words the announcing log ranks below the entry and the three logs
        res = idx.search(q, max_results=3, min_score=0, mode="keyword", explain=True)
        got = [r["path"] for r in res["results"]]
        assert len(got) == 3 and "memory/2026-11-02.md" not in got
        assert got.index("memory/2026-11-03.md") < got.index("MEMORY.md")
        entry = next(r for r in res["results"] if r["path"] == "MEMORY.md")
        assert entry["explain"]["supersededBy"] == "memory/2026-11-03.md#L1-L4"


def test_fenced_code_in_a_curated_file_starts_no_entry_or_section() -> None:
    """A "## comment" or "- item" line inside a fenced block of MEMORY.md began a
    section or an entry: the fence was cut in two, its "heading" line was in no chunk
    and became the heading path of every later entry (an outside attack found it)."""
    from indexer.sources.curated import curated_chunks
    from indexer.sources.tokenizer import get_counter

    text = (
        "# Memory\n\n## Tools\n\n- Deploy script:\n  ```bash\n  # rollback step\n"
        "  ./deploy.sh --rollback\n  ```\n- **Backups**: nightly\n\n```\n"
        "## not a heading platypus\n- not an entry numbat\n```\n\n## Preferences\n\n"
        "- tea, not coffee\n"
    )
    chunks = curated_chunks(text, get_counter(), tokens=400, overlap=80)
    spans = {(c.start_line, c.end_line): c.heading for c in chunks}
    assert spans == {
        (5, 9): "Memory > Tools",
        (10, 15): "Memory > Tools",  # the entry with its fence, whole
        (19, 19): "Memory > Preferences",
    }
    lines = text.split("\n")
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    uncovered = [n for n, line in enumerate(lines, 1) if line.strip() and n not in covered]
    assert uncovered == [1, 3, 17]  # the real headings: in their sections' heading paths
