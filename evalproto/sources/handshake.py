"""The INFO hand-shake with an evaluator command: a small state machine.

A client asks every evaluator command for INFO first; evaluators that do not know it
must still work. What comes back decides how the evaluator is used:

- a JSON object describes it (its stat names, direction and signature);
- an ERROR line, or an exit, means it does not know INFO: it is started again without
  it (a fail-fast evaluator exits after any ERROR, so it could not be used as it is);
- no line within INFO_WAIT means a slow start or an evaluator that ignores INFO, and
  the first line that comes tells which. A JSON object is the late description; any
  other reply is the reply to the first request (INFO was ignored). An ERROR line, or
  an exit, is ambiguous: a late refusal of INFO, or the failure of the first request.
  The evaluator is then started again without INFO and the requests are sent again,
  and whatever it says then is unambiguous: an ERROR is the first request's failure.

Once stopped (after a failure, on Ctrl-C, at the end), an evaluator is never started
again, whatever its threads still read.
"""

from __future__ import annotations

import enum
from typing import Dict, Optional, Tuple, Union

INFO_WAIT = 10.0
"""The longest wait for the reply to INFO before requests are sent without it."""


class State(enum.Enum):
    ASKED = "INFO sent, no reply yet"
    LATE = "INFO unanswered after INFO_WAIT: the first reply tells"
    DESCRIBED = "described by its INFO reply"
    UNDESCRIBED = "used without a description"
    STOPPED = "stopped"


class Event(enum.Enum):
    DESCRIPTION = "a JSON object"
    ERROR = "an ERROR line"
    OTHER = "another line"
    ENDED = "the end of its output"
    SILENCE = "no line within INFO_WAIT"


class Action(enum.Enum):
    DESCRIBE = "take the line as the description"
    RESTART = "start again without INFO (and send the requests again)"
    REPLY = "go on undescribed: the line is the reply to the first request"
    REFUSE = "fail: the reply to INFO is no description"
    WAIT = "send requests; the first reply tells"


TRANSITIONS: Dict[Tuple[State, Event], Tuple[State, Action]] = {
    (State.ASKED, Event.DESCRIPTION): (State.DESCRIBED, Action.DESCRIBE),
    (State.ASKED, Event.ERROR): (State.UNDESCRIBED, Action.RESTART),
    (State.ASKED, Event.ENDED): (State.UNDESCRIBED, Action.RESTART),
    (State.ASKED, Event.OTHER): (State.ASKED, Action.REFUSE),
    (State.ASKED, Event.SILENCE): (State.LATE, Action.WAIT),
    (State.LATE, Event.DESCRIPTION): (State.DESCRIBED, Action.DESCRIBE),
    (State.LATE, Event.ERROR): (State.UNDESCRIBED, Action.RESTART),
    (State.LATE, Event.ENDED): (State.UNDESCRIBED, Action.RESTART),
    (State.LATE, Event.OTHER): (State.UNDESCRIBED, Action.REPLY),
}

REASONS: Dict[Tuple[State, Event], str] = {
    (State.ASKED, Event.ERROR): "it answered INFO with {line}",
    (State.ASKED, Event.ENDED): "it exited when asked for INFO",
    (State.LATE, Event.ERROR): (f"it did not answer INFO within {INFO_WAIT:g} s, and its first "
                                f"reply was {{line}}, which may have been its answer to INFO"),
    (State.LATE, Event.ENDED): "it exited without answering INFO",
    (State.LATE, Event.OTHER): f"it did not answer INFO within {INFO_WAIT:g} s",
}
"""Why an evaluator goes on undescribed, for the warning that says so."""


def classify(line: Optional[Union[str, bytes]]) -> Event:
    """The event a line of an evaluator's output is (None: its output ended)."""
    if line is None:
        return Event.ENDED
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    if text.startswith("{"):
        return Event.DESCRIPTION
    if text.startswith("ERROR"):
        return Event.ERROR
    return Event.OTHER


def step(state: State, event: Event) -> Tuple[State, Action]:
    """The next state and what to do; only ASKED and LATE await anything."""
    if (state, event) not in TRANSITIONS:
        raise ValueError(f"no hand-shake step from {state.name} on {event.name}")
    return TRANSITIONS[state, event]


def reason(state: State, event: Event, line: str = "") -> str:
    """Why the evaluator goes on without a description, in words."""
    return REASONS[state, event].format(line=line)
