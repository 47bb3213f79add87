"""``memindex distill``: transcript batches for a distiller agent (jsonl_distill's protocol).

    init                 start from now: existing transcript content is skipped
    run                  next batch of new messages -> {"action": "created", "batchFile"}
                         (or "noop" when there is nothing new, "pending" while a batch
                         waits for its commit; nothing is read then)
    commit --batch-file  the batch was consumed: cursors move past it

Batch files are ``{batchId, createdAt, messages: [{agent, role, text, timestamp}]}``.
Fixed against jsonl_distill: cursors are keyed by the file's inode (plus a hash of its
first bytes), so a rotated file's unread tail is still delivered under its new name
and a new file at the old path starts from its beginning; there is no per-agent cap
that commits past messages nobody saw (a long delta spans several batches); batch
ids never collide; a cursor moves only on ``commit``. Noise (empty, NO_REPLY,
heartbeats, slash commands) and injected ``<relevant-memories>`` blocks are dropped;
secrets are redacted as for the index. State (``cursor.json``, written atomically)
and batch files live in ``<stateDir>/distill/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from indexer.config import Config, state_dir
from indexer.errors import InvalidParams
from indexer.sources.transcripts.line_reads import read_complete_lines
from indexer.sources.transcripts.sessions import (
    Malformed,
    list_transcripts,
    open_transcript,
    parse_message,
)

__all__ = ["Distiller"]

MAX_BATCH_MESSAGES = 200
MAX_READ_BYTES = 256 * 1024
_INJECTED = re.compile(r"<relevant-memories>.*?(?:</relevant-memories>|$)", re.S | re.I)


class _Cursor(TypedDict):
    """Where distill is in one transcript (cursor.json's ``files``, by dev:ino)."""

    agent: str
    path: str
    committed: int  # delivered and committed up to this byte
    pending: int | None  # delivered in the pending batch up to this byte
    head: str  # the hash of its first headLen bytes: a replaced file is read anew
    headLen: int


class _State(TypedDict):
    files: dict[str, _Cursor]
    pendingBatch: str | None


class _Message(TypedDict):
    agent: str
    role: str
    text: str
    timestamp: str | None
    source: str


Answer = dict[str, object]  # a command's JSON answer


@dataclass
class _Source:
    agent: str
    name: str
    path: str
    key: str  # "dev:ino"
    size: int


class Distiller:
    def __init__(self, agents: list[Config], root: Path | None = None) -> None:
        self.agents = agents
        base = agents[0].stateDir if agents and agents[0].stateDir else state_dir()
        self.root = root or base / "distill"
        self.batches = self.root / "batches"
        self.cursor_file = self.root / "cursor.json"

    # -- state -------------------------------------------------------------------

    def _load(self) -> _State:
        try:
            data = json.loads(self.cursor_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"files": {}, "pendingBatch": None}
        except ValueError as exc:
            raise InvalidParams(f"{self.cursor_file} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            return {"files": {}, "pendingBatch": None}
        files = data.get("files")
        pending = data.get("pendingBatch")
        return {
            "files": files if isinstance(files, dict) else {},
            "pendingBatch": pending if isinstance(pending, str) else None,
        }

    def _save(self, state: _State) -> None:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.cursor_file.with_name(f".cursor.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.cursor_file)

    def _sources(self) -> list[_Source]:
        out: list[_Source] = []
        for cfg in self.agents:
            for t in list_transcripts(
                cfg.sessions_dir(), cfg.sessions.includeRotated, links=cfg.limits.allowHardLinks
            ):
                out.append(_Source(cfg.agent_name, t.name, t.path, f"{t.dev}:{t.ino}", t.size))
        return out

    @staticmethod
    def _head(path: str, n: int) -> str:
        fd = open_transcript(path)
        try:
            return hashlib.sha256(os.pread(fd, n, 0)).hexdigest()
        finally:
            os.close(fd)

    def _start(self, src: _Source, cur: _Cursor | None) -> int:
        """Where to read this file from: its cursor, unless it was truncated or
        replaced (then from the beginning)."""
        if cur is None:
            return 0
        committed = int(cur.get("committed", 0))
        head_len = int(cur.get("headLen", 0))
        if src.size < committed or (head_len and self._head(src.path, head_len) != cur["head"]):
            return 0
        return committed

    def _unread(self) -> list[dict[str, str]]:
        """The agents whose transcripts are in OpenClaw's agent database (2026.9 and
        later), which distill does not read: said on every answer, not a silent
        noop."""
        out = []
        for cfg in self.agents:
            db = cfg.transcript_db()
            if db is not None and db.is_file():
                out.append(
                    {
                        "agent": cfg.agent_name,
                        "path": str(db),
                        "reason": "transcripts in OpenClaw's agent database are not read by "
                        "distill (JSONL transcripts only)",
                    }
                )
        return out

    def _said(self, answer: Answer) -> Answer:
        unread = self._unread()
        return {**answer, "unread": unread} if unread else answer

    # -- commands ----------------------------------------------------------------

    def init(self) -> Answer:
        files: dict[str, _Cursor] = {}
        for s in self._sources():
            head_len = min(256, s.size)
            files[s.key] = {
                "agent": s.agent,
                "path": s.path,
                "committed": s.size,
                "pending": None,
                "head": self._head(s.path, head_len),
                "headLen": head_len,
            }
        self._save({"files": files, "pendingBatch": None})
        return self._said({"ok": True, "action": "initialized", "files": len(files)})

    def run(self) -> Answer:
        state = self._load()
        pending = state["pendingBatch"]
        if pending:
            return {"ok": True, "action": "pending", "batchFile": pending}
        files = state["files"]
        present = self._sources()
        keys = {s.key for s in present}
        for gone in [k for k in files if k not in keys]:
            del files[gone]  # the file no longer exists: nothing left to deliver
        messages: list[_Message] = []
        advanced: dict[str, int] = {}
        for s in present:
            if len(messages) >= MAX_BATCH_MESSAGES:
                break
            cur = files.get(s.key)
            start = self._start(s, cur)
            new, end = self._read(s, start, MAX_BATCH_MESSAGES - len(messages))
            messages += new
            restarted = cur is not None and start != int(cur.get("committed", 0))
            if cur is None or restarted or end > start:
                head_len = min(256, max(end, start))
                files[s.key] = {
                    "agent": s.agent,
                    "path": s.path,
                    "committed": start,
                    "pending": None,
                    "head": self._head(s.path, head_len),
                    "headLen": head_len,
                }
            if end > start:
                advanced[s.key] = end
        if not messages:
            for key, end in advanced.items():  # only noise was new: move past it now
                files[key]["committed"] = end
            state["files"] = files
            self._save(state)
            return self._said({"ok": True, "action": "noop"})
        batch_id, batch_file = self._write_batch(messages)
        for key, end in advanced.items():
            files[key]["pending"] = end
        state["files"] = files
        state["pendingBatch"] = str(batch_file)
        self._save(state)
        return self._said(
            {
                "ok": True,
                "action": "created",
                "batchFile": str(batch_file),
                "batchId": batch_id,
                "messages": len(messages),
            }
        )

    def _read(self, s: _Source, start: int, room: int) -> tuple[list[_Message], int]:
        """The messages of ``s`` from byte ``start`` on (at most ``room``), and the
        byte after the last line read for them."""
        end = start
        fd = open_transcript(s.path)
        try:
            lines, stop, _ = read_complete_lines(fd, start, MAX_READ_BYTES)
        finally:
            os.close(fd)
        pos = start
        raw_offsets: list[int] = []
        for raw in lines:  # offsets of line ends, to stop exactly after a message
            pos += (len(raw) if raw is not None else 0) + 1
            raw_offsets.append(pos)
        if lines and raw_offsets[-1] != stop:  # \r\n or oversized lines: recount
            raw_offsets = self._line_ends(s.path, start, stop)
        messages: list[_Message] = []
        for raw, line_end in zip(lines, raw_offsets, strict=False):
            if len(messages) >= room:
                break
            end = line_end
            if raw is None:
                continue
            try:
                msg = parse_message(raw)
            except Malformed:
                continue
            if msg is None:
                continue
            text = " ".join(_INJECTED.sub(" ", msg.text).split())
            if not text or text.startswith("/"):
                continue
            messages.append(
                {
                    "agent": s.agent,
                    "role": msg.role,
                    "text": text,
                    "timestamp": msg.timestamp,
                    "source": s.name,
                }
            )
        return messages, end

    def _write_batch(self, messages: list[_Message]) -> tuple[str, Path]:
        """A new batch file of ``messages`` (written whole, then renamed into place),
        with its id."""
        batch_id = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:12]}"
        self.batches.mkdir(parents=True, exist_ok=True, mode=0o700)
        batch_file = self.batches / f"batch-{batch_id}.json"
        tmp = batch_file.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {"batchId": batch_id, "createdAt": time.time(), "messages": messages},
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
        os.replace(tmp, batch_file)
        return batch_id, batch_file

    @staticmethod
    def _line_ends(path: str, start: int, stop: int) -> list[int]:
        fd = open_transcript(path)
        try:
            data = os.pread(fd, stop - start, start)
        finally:
            os.close(fd)
        ends, pos = [], start
        for part in data.split(b"\n")[:-1]:
            pos += len(part) + 1
            ends.append(pos)
        return ends

    def commit(self, batch_file: str) -> Answer:
        state = self._load()
        pending = state["pendingBatch"]
        if not pending:
            raise InvalidParams("no batch is pending: nothing to commit")
        if os.path.abspath(batch_file) != os.path.abspath(pending):
            raise InvalidParams(f"the pending batch is {pending}, not {batch_file}")
        for cur in state["files"].values():
            done = cur.get("pending")
            if done is not None:
                cur["committed"] = done
                cur["pending"] = None
        state["pendingBatch"] = None
        self._save(state)
        Path(pending).unlink(missing_ok=True)
        return {"ok": True, "action": "committed", "batchFile": pending}
