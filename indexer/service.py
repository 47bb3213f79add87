"""Install the daemon as a user service: a systemd user unit or a launchd agent.

The unit templates are embedded here so an installed memindex can write them; the
repository's ``systemd/`` and ``launchd/`` files are the same text with install notes.
``render`` fills in the path of the running ``memindex`` executable and the home
directory.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

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


def render(kind: str, exe: str | None = None, home: Path | None = None) -> str:
    text = template(kind)
    return text.replace("@MEMINDEX@", exe or executable()).replace(
        "@HOME@", str(home or Path.home())
    )


def default_kind() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def target_path(kind: str, home: Path | None = None) -> Path:
    h = home or Path.home()
    if kind == "systemd":
        return h / ".config" / "systemd" / "user" / "memindex.service"
    return h / "Library" / "LaunchAgents" / "com.memindex.daemon.plist"


def install(kind: str) -> tuple[Path, str]:
    """Write the unit; returns (where, the command that starts it)."""
    path = target_path(kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(kind))
    if kind == "systemd":
        return path, "systemctl --user daemon-reload && systemctl --user enable --now memindex"
    return path, f"launchctl load -w {path}"
