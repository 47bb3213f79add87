"""Install the daemon as a user service: a systemd user unit or a launchd agent.

The unit templates are embedded here so an installed memindex can write them; the
repository's ``systemd/`` and ``launchd/`` files are the same text with install notes.
``render`` fills in the path of the running ``memindex`` executable, the global
options that select what to serve (``--config``, ``--workspace``, ``--agent``,
``--openclaw-config``, as absolute paths) and the home directory: the unit runs
exactly the daemon that ``memindex [those options] serve`` runs in a terminal.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = ["default_kind", "install", "render", "target_path", "template"]

_SYSTEMD = """\
[Unit]
Description=memindex: searchable agent memory (Markdown and session transcripts)
After=default.target

[Service]
Type=simple
ExecStart=@MEMINDEX@ serve
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=2
Environment=PYTHONUNBUFFERED=1
NoNewPrivileges=yes
UMask=0077

[Install]
WantedBy=default.target
"""


_LAUNCHD = """\
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>com.memindex.daemon</string>
  <key>ProgramArguments</key>
  <array>
    <string>@MEMINDEX@</string>
    <string>serve</string>
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>ThrottleInterval</key>
  <integer>5</integer>
  <key>EnvironmentVariables</key>
  <dict>
    <key>PYTHONUNBUFFERED</key>
    <string>1</string>
  </dict>
  <key>StandardOutPath</key>
  <string>@HOME@/Library/Logs/memindex.log</string>
  <key>StandardErrorPath</key>
  <string>@HOME@/Library/Logs/memindex.log</string>
</dict>
</plist>
"""


def template(kind: str) -> str:
    """The unit text with @MEMINDEX@ / @HOME@ placeholders (the files in systemd/ and
    launchd/ hold the same text plus install notes; a test keeps them equal)."""
    if kind == "systemd":
        return _SYSTEMD
    if kind == "launchd":
        return _LAUNCHD
    raise ValueError(f"unknown service kind {kind!r}")


def executable() -> str:
    """Absolute path of the ``memindex`` command this Python runs."""
    beside = Path(sys.executable).parent / "memindex"
    if beside.exists():
        return str(beside)
    found = shutil.which("memindex")
    if found:
        return str(Path(found).resolve())
    raise FileNotFoundError("cannot find the memindex executable; is memindex installed?")


_PLAIN = re.compile(r"^[A-Za-z0-9_./:=@+,-]+$")


def _systemd_word(word: str) -> str:
    """One ExecStart word: quoted when needed; ``%`` and ``$`` are systemd's
    specifier and variable marks, so they are doubled."""
    if not _PLAIN.match(word):
        word = '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word.replace("%", "%%").replace("$", "$$")


def render(
    kind: str,
    exe: str | None = None,
    home: Path | None = None,
    args: Sequence[str] = (),
) -> str:
    """The unit text. ``args``: global options placed before ``serve``."""
    text = template(kind).replace("@HOME@", str(home or Path.home()))
    argv = [exe or executable(), *args]
    if kind == "systemd":
        return text.replace("@MEMINDEX@", " ".join(_systemd_word(w) for w in argv))
    strings = "\n    ".join(f"<string>{escape(w)}</string>" for w in argv)
    return text.replace("<string>@MEMINDEX@</string>", strings)


def default_kind() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def target_path(kind: str, home: Path | None = None) -> Path:
    """Where the unit goes: systemd's user units under ``$XDG_CONFIG_HOME`` (else
    ``~/.config``), launchd's agents under ``~/Library/LaunchAgents``."""
    h = home or Path.home()
    if kind == "systemd":
        xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
        usable = xdg and os.path.isabs(xdg) and home is None  # a relative one is ignored
        base = Path(xdg) if usable else h / ".config"
        return base / "systemd" / "user" / "memindex.service"
    return h / "Library" / "LaunchAgents" / "com.memindex.daemon.plist"


def install(kind: str, args: Sequence[str] = ()) -> tuple[Path, str]:
    """Write the unit; returns (where, the command that starts it)."""
    path = target_path(kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(kind, args=args))
    if kind == "systemd":
        return path, "systemctl --user daemon-reload && systemctl --user enable --now memindex"
    return path, f"launchctl load -w {path}"
