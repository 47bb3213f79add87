"""A model's similarity scale, measured with the model itself, so that a score means
the same whatever the model.

Cosines are not comparable across models: all-MiniLM-L6-v2 gives an unrelated
question and note about 0.07 and a question and the note that answers it about
0.54, multilingual-e5-small 0.76 and 0.85, so a ``minScore`` of 0.35 drops nothing
of e5's. ``measure`` embeds ``PAIRS`` (questions as queries, notes as documents)
with the model and takes two levels: *related* (the mean cosine of each question
with its answer) and *unrelated* (the mean of every question with the other
answers). ``calibrate`` maps a cosine linearly so that the model's two levels land
on the reference model's (``REFERENCE``: all-MiniLM-L6-v2's own levels; for it
the map is the identity up to rounding). The writer stores a model's scale in
the index (``indexing.embedding``) and searches read it from there.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy and the provider base: loaded only to measure
    from .base import EmbeddingProvider

__all__ = ["META_KEY", "PAIRS", "REFERENCE", "Scale", "calibrate", "measure"]

META_KEY = "vectorScale"  # where an index keeps its model's scale (the meta table)

# A question someone asks of their memory, and the note that answers it in other
# words. Every other note of the list is unrelated to it.
PAIRS: tuple[tuple[str, str], ...] = (
    (
        "What time is the team standup?",
        "- Standup moved to 10:15 on weekdays, in the small meeting room.",
    ),
    (
        "Which database do we use for the billing service?",
        "Billing runs on PostgreSQL 16 since the migration in March.",
    ),
    ("When is my dentist appointment?", "Dr. Okafor: teeth cleaning booked for Thursday at 14:30."),
    ("How do I like my coffee?", "Prefers oat milk in coffee, never sugar."),
    (
        "What is the wifi password at the cabin?",
        "Cabin network: the router code is taped under the shelf, kestrel-2291.",
    ),
    ("Who is the landlord?", "The flat is rented from Maria Alves; rent is due on the 1st."),
    (
        "What did we decide about the deployment schedule?",
        "Decision: deploys only on Tuesdays and Thursdays, never on Friday afternoons.",
    ),
    (
        "Which laptop does Sam use for work?",
        "Sam's work machine is a 14-inch ThinkPad running Fedora.",
    ),
    ("What are the kids allergic to?", "Leo is allergic to peanuts; Mia reacts to penicillin."),
    (
        "Where did we go on holiday last summer?",
        "August trip: two weeks hiking in the Dolomites, we stayed in Cortina.",
    ),
    (
        "What's the budget for the kitchen renovation?",
        "Kitchen remodel capped at 18,000 euros including appliances.",
    ),
    (
        "How often should the plants be watered?",
        "Water the ferns twice a week and the cactus once a month.",
    ),
    ("Which gym am I a member of?", "Signed up for the climbing gym downtown, monthly plan."),
    ("What is the car's license plate?", "Our Golf is registered as KL-482-QT."),
    (
        "Which programming language is the API written in?",
        "The backend API is written in Go, with a small Python admin tool.",
    ),
    ("When is mom's birthday?", "Mother's birthday: 12 June. She likes orchids."),
    ("What book am I reading right now?", "Currently halfway through The Left Hand of Darkness."),
    (
        "How do I restart the home server?",
        "To reboot the NAS: ssh in as admin and run sudo systemctl reboot.",
    ),
    (
        "What's my health insurance policy number?",
        "Health insurance policy no. 77-1093-44 with Allianz.",
    ),
    ("Who is on call this week?", "On-call rotation: Priya covers this week, Tom the next."),
    (
        "What did the doctor say about my blood pressure?",
        "GP visit: blood pressure slightly high, recheck in three months, eat less salt.",
    ),
    (
        "Which flight do I take to Lisbon?",
        "Booked TP 1337 to Lisbon, departs 07:40 from terminal 1.",
    ),
    ("What is the neighbours' dog called?", "The neighbours' beagle is called Biscuit."),
    (
        "What's our savings goal this year?",
        "Goal for the year: put 6,000 aside in the emergency fund.",
    ),
)

# Levels closer than this many spreads of the unrelated cosines tell nothing apart (a
# model that embeds at random, a test's stand-in): its cosines are left as they are.
# (all-MiniLM-L6-v2: 5.7; multilingual-e5-small: 4.2; 64 random dimensions: ~0.2.)
MIN_SEPARATION = 2.0


@dataclass(frozen=True)
class Scale:
    """A model's two levels on ``PAIRS``: the mean cosine of a question with its
    answer and with the other answers, and the spread (standard deviation) of the
    latter."""

    related: float
    unrelated: float
    spread: float = 0.0

    @property
    def usable(self) -> bool:
        return self.related - self.unrelated >= MIN_SEPARATION * max(self.spread, 0.01)

    def to_meta(self, key: str) -> str:
        d = {"key": key, "related": self.related, "unrelated": self.unrelated}
        return json.dumps(d | {"spread": self.spread})

    @staticmethod
    def from_meta(text: str | None, key: str) -> Scale | None:
        """The scale stored for the model ``key`` (None: none, or another model's)."""
        try:
            d = json.loads(text or "null")
            if not isinstance(d, dict) or d.get("key") != key:
                return None
            return Scale(float(d["related"]), float(d["unrelated"]), float(d["spread"]))
        except (ValueError, TypeError, KeyError):
            return None


# all-MiniLM-L6-v2 (f32 GGUF, the reference model), measured with ``measure``.
REFERENCE = Scale(related=0.5365, unrelated=0.0728, spread=0.082)

_MEASURED: dict[str, Scale] = {}
_LOCK = threading.Lock()


def measure(provider: EmbeddingProvider) -> Scale:
    """``provider``'s scale (2 requests to a remote provider; memoised per model key
    in this process). Raises the provider's errors."""
    import numpy as np

    from .base import normalize

    key = provider.key()
    with _LOCK:
        if key in _MEASURED:
            return _MEASURED[key]
    q = normalize(np.asarray(provider.embed_queries([q for q, _ in PAIRS]), dtype=np.float32))
    d = normalize(np.asarray(provider.embed_all([d for _, d in PAIRS]), dtype=np.float32))
    if q.shape != d.shape or q.shape[0] != len(PAIRS) or not np.isfinite(q @ d.T).all():
        raise ValueError(f"vectors of shape {q.shape} and {d.shape}")
    sims = q @ d.T
    n = len(PAIRS)
    others = sims[~np.eye(n, dtype=bool)]
    scale = Scale(
        related=round(float(np.diag(sims).mean()), 4),
        unrelated=round(float(others.mean()), 4),
        spread=round(float(others.std()), 4),
    )
    with _LOCK:
        _MEASURED[key] = scale
    return scale


def calibrate(cosine: float, scale: Scale | None, reference: Scale = REFERENCE) -> float:
    """``cosine`` of a model with ``scale`` on the reference model's scale, in 0..1
    (unchanged without a usable scale)."""
    if scale is None or not scale.usable:
        return cosine
    slope = (reference.related - reference.unrelated) / (scale.related - scale.unrelated)
    return min(1.0, max(0.0, reference.unrelated + (cosine - scale.unrelated) * slope))
