"""What an agent's `act()` returns when it has no valid action of its own.

When the model's answer fails its schema (after the retries), says nothing
the agent does, or only copies another agent when asked once more, there
is no action of the agent's own, and none is made up for it. What `act()`
returns then is the prefab parameter `on_invalid_action`:

  "mark"     (the default) the agent's name and a marker, "Ana (no valid
             action: the model's answer failed its schema)": this
             project's game master records such a turn unadjudicated and
             observers pass over it; a stock Concordia game master would
             narrate the marker as if it were the agent's deed.
  "nothing"  "Ana does nothing.": a neutral line a stock game master can
             narrate without inventing a deed (this project's referee
             then judges it as the line it is).
  "raise"    `NoValidAction` is raised from `act()`, for a caller that
             wants to stop or handle the turn itself.

Every choice records the failure as before (the agent's measurements, the
operation's warning); the agent's own state (what it goes on with, that
it must act anew next slot) is the same under all three.
"""

from __future__ import annotations

from crsec_concordia import observations

MARK, NOTHING, RAISE = "mark", "nothing", "raise"
CHOICES = (MARK, NOTHING, RAISE)
DEFAULT_CHOICE = MARK


class NoValidAction(RuntimeError):
  """The agent has no valid action of its own this turn (`raise`)."""


def shown(output: str, name: str, choice: str = DEFAULT_CHOICE) -> str:
  """What `act()` returns for `output` under `choice`: `output` itself
  when it is an action of the agent's own."""
  if choice == MARK or not observations.is_no_action(output):
    return output
  if choice == NOTHING:
    return f"{name} does nothing."
  raise NoValidAction(output)
