"""Which plan block is 'Now': the act's concrete activity for the slot."""

from crsec_concordia.components.normative_planner import _current_block

ITEMS = [{"start": "10:00", "end": "10:15", "activity": "study"},
         {"start": "10:15", "end": "10:15", "activity": "phone call"},
         {"start": "11:00", "end": "12:00", "activity": "lunch"}]


def test_the_covering_block_is_current():
  assert _current_block(ITEMS, "11:30")["activity"] == "lunch"
  assert _current_block(ITEMS, "10:05")["activity"] == "study"


def test_a_gap_belongs_to_the_block_begun_last():
  # "10:15-10:15" is empty; from 10:15 to 11:00 the last block begun runs.
  assert _current_block(ITEMS, "10:30")["activity"] == "phone call"
  assert _current_block(ITEMS, "12:30")["activity"] == "lunch"


def test_before_the_first_block_the_first_is_current():
  assert _current_block(ITEMS, "09:00")["activity"] == "study"


def test_no_plan_no_block():
  assert _current_block([], "09:00") is None
