"""The venue's game master: Concordia's game master machinery, our components.

One component per module, each under the reserved key Concordia's
`SwitchAct` consults, so the game master never asks a model whether to stop,
who acts, or in what format (played by crsec_concordia.runs.slot_engine):

  __terminate__        clock.SlotClock              simulated time, episode end
  __next_acting__      acting.EveryoneActs          every agent, every slot
  __next_action_spec__ action_spec.FixedActionSpec  "It is Day 1 09:10 at ..."
                       (with the situation of a scenario occasion, occasions.py)
  __make_observation__ exact_observations.ExactObservations  verbatim events
  __resolution__       adjudication.Adjudication    every new action put to
                       the referee (referee/: its pipeline, one step a module)
  conversations        conversations.NormConversations  CRSEC sender talks
                       (held when a slot is resolved, within a place)
  whereabouts          whereabouts.Whereabouts  where each agent is; the
                       slot's moves (places.py: the scenario's places;
                       perception.py: what each agent perceives of a slot)
  slot_actions.SlotActions: how the engine hands a slot's actions over.

`GAME_MASTER_PREFABS` registers `venue__GameMaster` for a Concordia `Config`.
"""

from crsec_concordia.game_masters.acting import EveryoneActs
from crsec_concordia.game_masters.action_spec import FixedActionSpec
from crsec_concordia.game_masters.adjudication import Adjudication
from crsec_concordia.game_masters.clock import SlotClock, stamp_fields
from crsec_concordia.game_masters.conversations import NormConversations
from crsec_concordia.game_masters.exact_observations import ExactObservations
from crsec_concordia.game_masters.occasions import Occasion, occasion_at
from crsec_concordia.game_masters.perception import LocalPerception
from crsec_concordia.game_masters.places import PlaceMap
from crsec_concordia.game_masters.prefab import (
    GAME_MASTER_PREFABS,
    VenueGameMaster,
    drain_records,
    gate_counts_of,
)
from crsec_concordia.game_masters.referee import ADJUDICATE_TAG, Referee
from crsec_concordia.game_masters.slot_actions import SlotActions
from crsec_concordia.game_masters.whereabouts import Whereabouts

__all__ = [
    "ADJUDICATE_TAG", "Adjudication", "SlotClock", "VenueGameMaster",
    "EveryoneActs", "ExactObservations", "FixedActionSpec",
    "LocalPerception", "NormConversations", "Occasion", "GAME_MASTER_PREFABS",
    "PlaceMap", "Referee", "SlotActions", "Whereabouts", "drain_records",
    "gate_counts_of", "occasion_at", "stamp_fields",
]
