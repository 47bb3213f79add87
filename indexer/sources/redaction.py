"""Secrets in transcripts: ``redact`` replaces them with ``[REDACTED]``.

It runs on decoded text — a message's text once its JSON is parsed — never on a raw
JSONL line, where an escape (``\\n``, ``\\/``, ``\\u0067``) hides a token from every
pattern. Every path that hands transcript text out (the chunks the index stores,
so snippets; ``memory_get``, rendered or raw) goes through it; ``redact_json`` is
the raw form's: every string inside a parsed event, keys too.

Three kinds of pattern: a key name that announces a secret (``password=…``,
``"apiKey": "…"``, ``my password is …``), a command line that carries one
(``mysql -p…``, ``curl -u user:…``, a URL's password), and a token whose shape is
its vendor's (``ghp_…``, ``xoxb-…``, ``AKIA…`` and the secret beside it). Each
pattern's whole match is replaced unless it has a group named ``keep``, which stays
in front of the marker.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["REDACTED", "find_secrets", "redact", "redact_json"]

REDACTED = "[REDACTED]"

# A key name that announces a secret: any words joined by _ - or . (or camelCase)
# around one of these, so DB_PASSWORD, aws_secret_access_key, "apiKey" and
# OPENAI_API_KEY all count, but "tokenizer" or "passwords are hard" do not.
_SECRET_WORDS = (
    r"(?i:password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key"
    r"|access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token|token"
    r"|credentials?|private[_-]?key|client[_-]?secret|account[_-]?key|shared[_-]?access[_-]?key"
    r"|signing[_-]?key|encryption[_-]?key|webhook[_-]?secret|sas[_-]?token|creds"
    r"|client[_-]?key(?:[_-]?data)?|passwrod|pasword)"
)
_KEY_NAME = (
    r"(?<![A-Za-z0-9_.\-])(?:[A-Za-z0-9]+[_.\-])*(?:[A-Z0-9]{1,12}(?=[A-Z]))?"  # PGPASSWORD
    + _SECRET_WORDS
    + r"(?:[_.\-][A-Za-z0-9]+|[A-Z][a-z0-9]+)*"
)
# "my password is X": the words that, after "is", are not the secret but prose
_PROSE = (
    r"(?:a|an|the|not|no|now|also|still|just|very|too|so|set|stored|saved|kept|in|on|at"
    r"|for|from|of|to|with|here|there|that|this|what|which|wrong|right|correct|incorrect"
    r"|invalid|valid|expired|required|optional|missing|empty|blank|weak|strong|long"
    r"|short|same|different|hidden|secret|unknown|case|something|anything|one"
    r"|[a-z]+(?:ed|ing|ly|able|ible))\b"
)

# Vendors' token shapes (prefix and alphabet), one alternation: (pattern, note)
_TOKENS = [
    r"(?:sk|pk|rk)-(?:proj-|live-|test-|ant-[a-z0-9]*-?|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",
    r"(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    r"whsec_[A-Za-z0-9]{16,}",  # Stripe webhooks
    r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",  # GitHub
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"gl(?:pat|dt|rt|ptt|oas|soat|cbt|imt|ft|wt|agent)-[A-Za-z0-9_\-]{16,}",  # GitLab
    r"GR1348941[A-Za-z0-9_\-]{20,}",  # GitLab runner registration
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"pa-[A-Za-z0-9_\-]{20,}",  # Voyage AI
    r"xox[abposre]-[A-Za-z0-9-]{10,}",  # Slack
    r"xoxe\.xox[bp]-[A-Za-z0-9-]{10,}",
    r"xapp-\d-[A-Za-z0-9-]{10,}",  # Slack app-level
    r"(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"AIza[0-9A-Za-z_\-]{30,}",  # Google API keys
    r"GOCSPX-[A-Za-z0-9_\-]{20,}",  # Google OAuth client secrets
    r"ya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth access tokens
    r"1//0[0-9A-Za-z_\-]{30,}",  # Google OAuth refresh tokens
    r"npm_[A-Za-z0-9]{30,}",  # npm
    r"pypi-[A-Za-z0-9_\-]{40,}",  # PyPI
    r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
    r"dop_v1_[a-f0-9]{40,}",  # DigitalOcean
    r"\d{8,10}:AA[A-Za-z0-9_\-]{30,}",  # Telegram bots
    r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
    r"(?:sk|pk|tk)\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",  # Mapbox
    r"SK[0-9a-fA-F]{32}\b",  # Twilio API keys
    r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}",  # Discord bots
    r"key-[0-9a-zA-Z]{32}\b",  # Mailgun
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",  # Shopify
    r"AT(?:ATT|CTT)3[A-Za-z0-9_\-=]{20,}",  # Atlassian
    r"ATBB[A-Za-z0-9_\-=.]{24,}",  # Bitbucket app passwords
    r"hv[sbr]\.[A-Za-z0-9_\-]{20,}",  # HashiCorp Vault
    r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-]{40,}",  # Terraform Cloud
    r"lin_(?:api|oauth)_[A-Za-z0-9]{32,}",  # Linear
    r"secret_[A-Za-z0-9]{40,}",  # Notion (integrations)
    r"ntn_[A-Za-z0-9]{40,}",  # Notion
    r"dp\.(?:st|ct|sa|scim|audit|pt)\.[A-Za-z0-9_\-.]{20,}",  # Doppler
    r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",  # Grafana service accounts
    r"glc_[A-Za-z0-9+/]{32,}={0,2}",  # Grafana Cloud
    r"eyJrIjoi[A-Za-z0-9+/=]{30,}",  # Grafana API keys (base64 JSON)
    r"AGE-SECRET-KEY-1[0-9A-Z]{50,}",  # age
    r"sntry[su]_[A-Za-z0-9+/=_]{30,}",  # Sentry auth tokens
    r"dapi[a-f0-9]{32}",  # Databricks
    r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{20,}",  # Square
    r"EAAA[A-Za-z0-9_\-]{40,}",  # Square access tokens
    r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{30,}",  # PlanetScale
    r"pul-[a-f0-9]{40}",  # Pulumi
    r"sbp_[a-f0-9]{40}",  # Supabase
    r"r8_[A-Za-z0-9]{30,}",  # Replicate
    r"gsk_[A-Za-z0-9]{40,}",  # Groq
    r"pplx-[A-Za-z0-9]{40,}",  # Perplexity
    r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}",  # Postman
    r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}",  # Airtable
    r"figd_[A-Za-z0-9_\-]{30,}",  # Figma
    r"NRAK-[A-Z0-9]{27}",  # New Relic
    r"tskey-(?:auth|api|client|webhook)-[A-Za-z0-9]+-[A-Za-z0-9]+",  # Tailscale
    r"ops_eyJ[A-Za-z0-9+/=_\-]{30,}",  # 1Password service accounts
    r"dckr_pat_[A-Za-z0-9_\-]{20,}",  # Docker Hub
    r"LTAI[A-Za-z0-9]{16,}",  # Alibaba Cloud
    r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}",  # Firebase Cloud Messaging
    r"fo1_[A-Za-z0-9_\-]{30,}",  # Fly.io
    r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}",  # Azure AD client secrets
]


@functools.cache
def _patterns() -> list[re.Pattern[str]]:
    """Compiled on first use (a process with no transcripts to read skips it)."""
    return [
        # key blocks: PEM (RSA, EC, OpenSSH, encrypted, PGP's BLOCK) and PuTTY files
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)",
            re.S,
        ),
        re.compile(r"PuTTY-User-Key-File-\d.*?(?:Private-MAC:\s*[0-9a-fA-F]+|$)", re.S),
        # key = value, key: value, "key": "value", key => 'value' (env files, JSON, YAML)
        re.compile(
            r"(?P<keep>" + _KEY_NAME + r"\\?[\"']?\s*(?:[:=]|=>)\s*)"
            r"(?:\\?\"[^\"\n]+?\\?\"|'[^'\n]+'|[^\s\"',;}\]\\]{4,})"
        ),
        # prose: "my password is X", "the api key was X", "the password for github: X",
        # "the root password on pantry-pi is X", "the password is: X", "Password - X"
        re.compile(
            r"(?P<keep>\b(?i:password|passphrase|passcode|passwd|pwd|pw|api key|secret key"
            r"|access key|token|(?:wi-?fi|wpa2?|network|router) (?:key|code))s?"
            r"(?:\s+(?i:for|on|of|to)\s+[^\n:=.,;]{1,40}?)?"
            r"\s*(?:\s(?i:is|was|will be)(?:\s+(?i:now|still|currently))?\b\s*[:=\-]?|[:=]|\s-"
            r"|\s(?i:changed|set|updated|reset|rotated)\s+to\b)\s*(?!(?i:" + _PROSE + r"))"
            r"[\"'“‘`]?)[^\s\"'”’`]{3,}"
        ),
        # a password right after the word, letters and digits: "Mailbox password Tr0ub4dorQx9"
        re.compile(
            r"(?P<keep>\b(?i:password|passphrase|passcode|passwd|pwd)\s+)"
            r"(?=[^\s\"'`]*\d)(?=[^\s\"'`]*[A-Za-z])[^\s\"'`]{8,}"
        ),
        # what is a secret to its end of line: a passphrase, recovery codes, a seed phrase
        re.compile(
            r"(?P<keep>\b(?i:(?:gpg |ssh |key |wallet )?passphrase|pass phrase|seed phrase"
            r"|mnemonic(?: phrase)?|recovery (?:codes?|phrase|key)|backup codes?)"
            r"\s*(?:[:=]|\s(?i:is|was)\b\s*:?)\s*)[^\n]{3,}"
        ),
        # a bare key after its name: "api key 9f86d0…" (hex or a long mixed token)
        re.compile(
            r"(?P<keep>\b(?i:api|access|secret|license)[ _-]?(?i:key)\s+)"
            r"(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{16,}"
        ),
        # YAML's short key: "pass: X" (a key on its own line)
        re.compile(r"(?m)(?P<keep>^[ \t-]*(?i:pass|pw)\s*:\s+)[^\s#]{3,}"),
        # a card's security code (the number itself: _CARD, checked by its digit)
        re.compile(r"(?P<keep>\b(?i:cvv2?|cvc2?|csc|security code)\s*[:=]?\s*)\S{3,}"),
        re.compile(
            r"(?P<keep>(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?:[A-Za-z]+\s+)?)[^\s\"']{6,}"
        ),
        re.compile(r"(?P<keep>\b(?i:basic|bearer|token)\s+)[A-Za-z0-9._~+/\-]{16,}=*"),
        *_command_and_url_patterns(),
        *_more_patterns(),
    ]


def _command_and_url_patterns() -> list[re.Pattern[str]]:
    """Secrets on command lines, in URLs and in well-known token shapes."""
    return [
        # command lines: mysql -pSECRET, curl -u user:SECRET, sshpass -p SECRET
        re.compile(
            r"(?P<keep>\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?\s-p)"
            r"(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)"
        ),
        re.compile(r"(?P<keep>\bcurl\b[^\n|;&]*?\s(?:-u|--user)\s*[\"']?[^\s:\"']*:)[^\s\"']+"),
        re.compile(r"(?P<keep>\bsshpass\s+-p\s*)[^\s]+"),
        # --password X, --token=X, --api-key X (any command); docker/podman/helm login -p
        re.compile(
            r"(?P<keep>(?<![\w-])--(?i:password|passwd|pass|token|api-?key|secret|client-secret"
            r"|auth-token|access-token|private-key)(?:=|\s+))(?!-)[^\s]+"
        ),
        re.compile(
            r"(?P<keep>\b(?:docker|podman|buildah|skopeo|helm|nerdctl|oras)\b[^\n|;&]*?"
            r"\blogin\b[^\n|;&]*?\s-p\s*)[^\s]+"
        ),
        # htpasswd -b FILE USER PASSWORD (and -bc, -nb: the password is the last word)
        re.compile(
            r"(?P<keep>\bhtpasswd\s+-[a-zA-Z]*b[a-zA-Z]*\s+(?:-\S+\s+)*(?:\S+\s+)?\S+\s+)\S+"
        ),
        # passwd with a password after it ("passwd hunter2" pasted in a chat)
        re.compile(r"(?P<keep>\bpasswd\s+)(?=\S*\d)(?=\S*[A-Za-z])[^\s-]\S{5,}"),
        # URLs: a password (user may be empty: redis://:pw@), a long token as the whole
        # userinfo (Sentry DSNs), Slack and Discord webhooks, Azure SAS signatures. A
        # scheme is at most 32 characters: unbounded, a run of "ab-ab-…" cost time
        # quadratic in its length (a 40 KB one 1 s, a 4 MiB message hours)
        re.compile(r"(?P<keep>\b[a-z][a-z0-9+.\-]{0,31}://[^\s:/@]*:)[^\s@/]+(?=@)"),
        re.compile(r"(?P<keep>\b[a-z][a-z0-9+.\-]{0,31}://)[A-Za-z0-9_\-]{20,}(?=@)"),
        re.compile(r"(?P<keep>hooks\.slack\.com/(?:services|workflows|triggers)/)[\w/\-]+"),
        re.compile(r"(?P<keep>discord(?:app)?\.com/api/webhooks/\d+/)[\w\-]+"),
        re.compile(r"(?P<keep>[?&](?i:sig|signature|x-amz-signature)=)[A-Za-z0-9%/+=_\-]{16,}"),
        re.compile(r"(?<![A-Za-z0-9_\-])(?:" + "|".join(_TOKENS) + ")"),
    ]


_ARG = r"(?:'[^'\n]*'|\"[^\"\n]*\"|\S+)"  # a command line's argument, quoted or not
_IS = r"\s*(?:\s(?i:is|was)\b\s*[:=]?|[:=])\s*"  # "is", "was", ":" or "="


# The fourth outside attack's shapes (a command line's password option, a file
# format's secret field, a secret named in another language, a PIN), each with the
# words before it kept.
def _more_patterns() -> list[re.Pattern[str]]:
    """Compiled when ``_patterns`` first runs."""
    return [
        # SSHPASS=, db_pass=, SMTP_PASS: (not first_pass=True: a service's or a user's)
        re.compile(
            r"(?P<keep>(?<![A-Za-z0-9_.\-])(?:SSH|(?i:db|sql|mysql|pg|smtp|ftp|mail|redis|ldap|admin"
            r"|root|user|vpn|wifi|app|api|sftp|imap)_?)(?i:pass)[\"']?\s*[:=]\s*)"
            r"(?!(?i:true|false|none|null)\b)(?:'[^'\n]{3,}'|\"[^\"\n]{3,}\"|[^\s\"',;}\]]{4,})"
        ),
        re.compile(
            r"(?P<keep>\b(?i:set-cookie|cookie)\s*:[^\n]*?(?<![\w.-])(?i:[\w.]*sid|[\w.]*sess(?:ion)?"
            r"(?:_?id)?|auth[\w.]*|token|remember[\w.]*)=)[^;\s]{8,}"
        ),
        re.compile(r"(?P<keep>\"auth\"\s*:\s*\")[A-Za-z0-9+/=]{16,}"),
        re.compile(
            r"(?P<keep>(?<![\w.\-:])(?:[A-Za-z][\w\-]*\.[\w.\-]+|localhost|\*):(?:\d{2,5}|\*)"
            r":[\w.\-*]+:[\w.\-*]+:)"
            r"[^\s:]{3,}"
        ),
        re.compile(r"(?P<keep>\bWIFI:[^\n]*?(?<=[:;])P:)[^;\n]+"),
        re.compile(
            r"(?P<keep>\b(?i:2fa|totp|otp|mfa|authenticator|two-factor)\b[^\n]{0,60}?"
            r"\b(?i:key|seed|secret|code)\b[^\n]{0,20}?\s)[A-Z2-7]{16,}=*(?![A-Za-z0-9])"
        ),
        re.compile(
            r"(?P<keep>(?i:passwort|kennwort|mot de passe|contrase(?:ñ|n)a|senha|пароль|hasło"
            r"|wachtwoord|lösenord|adgangskode|salasana)(?:\s+\S+){0,4}?\s*"
            r"(?:\s(?i:ist|est|es|é|är|is|jest|er|on)\b\s*[:=]?|[:：=])\s*)"
            r"(?=\S*[\d#*!@$%&])[^\s\"'«»“”]{4,}"
        ),
        re.compile(
            r"(?P<keep>(?:密码|密碼|パスワード|비밀번호)\s*(?:是|は|为|為|:|：|는|=)\s*)[^\s，。、]{4,}"
        ),
        re.compile(r"(?P<keep>\baz\b[^\n|;&]*?\s(?:-p|--password)\s+)" + _ARG),
        re.compile(r"(?P<keep>\bldap\w*\b[^\n|;&]*?\s-w\s+)" + _ARG),
        re.compile(r"(?P<keep>\s-pass(?:in|out)?\s+pass:)\S+"),
        re.compile(r"(?P<keep>\b7z[ar]?\b[^\n|;&]*?\s-p)(?=\S)" + _ARG),
        re.compile(r"(?P<keep>\b(?:zip|unzip)\b[^\n|;&]*?\s-P\s+)" + _ARG),
        re.compile(r"(?P<keep>\bsmbclient\b[^\n|;&]*?\s(?:-U|--user)\s*[^\s%]+%)\S+"),
        re.compile(r"(?P<keep>\bredis-cli\b[^\n|;&]*?\s(?:-a|--pass)\s+)" + _ARG),
        re.compile(r"(?P<keep>\s-(?:store|key|srcstore|deststore|srckey|destkey)pass\s+)" + _ARG),
        re.compile(r"(?P<keep>\baws\s+configure\s+set\s+[\w.]*(?i:secret|token|key)[\w.]*\s+)\S+"),
        re.compile(
            r"(?P<keep>\b(?i:pin(?: code| number)?|unlock code|passcode|door code|alarm code"
            r"|gate code|access code|lock code|safe code)" + _IS + r")\d{4,10}\b"
        ),
        re.compile(
            r"(?P<keep>\b(?i:vpn|shared|pre-shared|psk|router|admin) (?i:secret|key|psk)"
            + _IS
            + r"(?!(?i:"
            + _PROSE
            + r"))[\"'“‘`]?)[^\s\"'”’`]{4,}"
        ),
    ]


# An AWS secret access key has no prefix: 40 characters of base64 near its key id.
_AWS_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_NEAR = 200  # characters either side of a key id


# Characters that show as nothing (zero-width space, joiners, word joiner, BOM,
# soft hyphen): "pass\u200bword=X" reads as password=X to a person, to no pattern.
_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")


# A payment card number: 13-19 digits, in groups or not, whose Luhn check digit is
# right (an order number or a timestamp of as many digits seldom is).
_CARD = re.compile(r"(?<![\d.,])\d(?:[ -]?\d){12,18}(?![\d.,]\d)")


def _card(m: re.Match[str]) -> str:
    digits = [int(c) for c in m.group(0) if c.isdigit()]
    total = 0
    for n, d in enumerate(reversed(digits)):
        if n % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return REDACTED if total % 10 == 0 else m.group(0)


def redact(text: str) -> str:
    """``text`` with every secret it recognises replaced by ``[REDACTED]``."""
    if _INVISIBLE.search(text):
        text = _INVISIBLE.sub("", text)
    if _CARD.search(text):
        text = _CARD.sub(_card, text)
    if _AWS_ID.search(text):
        text = _redact_aws_secrets(text)
    if _BARE_SECRET.search(text):
        text = _BARE_SECRET.sub(_bare, text)
    for pattern in _patterns():
        text = pattern.sub(_replacement, text)
    return text


# What each of ``_patterns()`` finds, in its order (``find_secrets`` names them).
_NAMES = (
    "a private key block", "a PuTTY key file", "a secret after its key name",
    "a password in a sentence", "a password after the word",
    "a passphrase or recovery codes", "an API key after its name",
    "a password in YAML", "a card's security code", "an Authorization header",
    "a bearer token", "a mysql -p password", "a curl -u password", "an sshpass password",
    "a --password option", "a registry login password", "an htpasswd password",
    "a passwd argument", "a password in a URL", "a token in a URL", "a Slack webhook",
    "a Discord webhook", "a URL's signature", "a vendor's token",
    "a password variable", "a session cookie", "a registry's auth", "a .pgpass line",
    "a Wi-Fi QR password",
    "a TOTP seed", "a password in another language", "a password in another language",
    "an az login password", "an LDAP bind password", "an openssl password",
    "a 7z password", "a zip password", "an smbclient password", "a redis-cli password",
    "a keystore password", "an AWS credential", "a PIN or door code", "a shared secret",
)  # fmt: skip


def find_secrets(text: str) -> list[tuple[str, str]]:
    """(what it is, the secret) for each secret ``redact`` would take out of ``text``
    (the memory audit names them; nothing is replaced)."""
    text = _INVISIBLE.sub("", text)
    found = [("a payment card number", m.group(0)) for m in _CARD.finditer(text)]
    found = [f for f in found if _card(_CARD.match(f[1])) == REDACTED]  # type: ignore[arg-type]
    found += [("an AWS secret key", m.group(0)) for m in _BARE_SECRET.finditer(text)]
    found = [f for f in found if f[0] != "an AWS secret key" or _bare_mixed(f[1])]
    if _AWS_ID.search(text) and _redact_aws_secrets(text) != text:
        found += [("an AWS key pair", m.group(0)) for m in _AWS_ID.finditer(text)]
    for name, pattern in zip(_NAMES, _patterns(), strict=True):
        for m in pattern.finditer(text):
            start = m.end("keep") if "keep" in m.re.groupindex else m.start()
            found.append((name, text[start : m.end()]))
    # the most telling name first: a vendor's token before "a password in a sentence"
    return sorted(found, key=lambda f: f[0] in _GENERIC)


_GENERIC = frozenset(
    ("a secret after its key name", "a password in a sentence", "a password after the word")
)


def _replacement(m: re.Match[str]) -> str:
    return (m.group("keep") if "keep" in m.re.groupindex else "") + REDACTED


# A key id may be far away, or not pasted at all: a lone 40-character run of base64
# that mixes upper case, lower case and digits is taken for an AWS secret key too (a
# git hash is lower-case hex, a word has no digits; base64 data is longer).
_BARE_SECRET = re.compile(r"(?<![A-Za-z0-9/+=_\-.])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_\-])")


def _bare(m: re.Match[str]) -> str:
    return REDACTED if _bare_mixed(m.group(0)) else m.group(0)


def _bare_mixed(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isupper() for c in s) and s.lower() != s


def _redact_aws_secrets(text: str) -> str:
    spans = [(max(0, m.start() - _AWS_NEAR), m.end() + _AWS_NEAR) for m in _AWS_ID.finditer(text)]

    def near(m: re.Match[str]) -> str:
        s = m.group(0)
        mixed = any(c.isdigit() or c in "/+" for c in s) and s.lower() != s and s.upper() != s
        if mixed and any(a <= m.start() < b for a, b in spans):
            return REDACTED
        return s

    return _AWS_SECRET.sub(near, text)


def redact_json(value: Any) -> Any:
    """A parsed JSON value with every string in it redacted (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, dict):
        return {redact(str(k)): redact_json(v) for k, v in value.items()}
    return value
