"""The personal norm and its database: every lifecycle rule."""

import json

import pytest

from crsec_concordia.norms import (LifecycleError, NormDatabase, Origin,
                                   PersonalNorm, RejectionReason, Status)


def _db_with_candidate():
  db = NormDatabase("Carlos Gomez")
  norm = db.add("No smoking indoors.", "injunctive", 70,
                origin=Origin.CONVERSATION, source_text="talk",
                source_agent="Abigail Chen", step=3, time="Day 1 09:30")
  return db, norm


def test_new_candidate_is_deactivated_and_invalid():
  db, norm = _db_with_candidate()
  assert (norm.activated, norm.valid) == (False, False)
  assert norm.status == Status.CANDIDATE
  assert db.candidates() == [norm] and db.qualified() == []
  assert norm.id == "carlos-1" and norm.source_agent == "Abigail Chen"


def test_created_norms_are_qualified_at_once_and_do_not_count():
  db = NormDatabase("Abigail Chen")
  norm = db.add("Be quiet.", "injunctive", 80, origin=Origin.CREATED,
                qualified=True)
  assert norm.status == Status.QUALIFIED and db.counter == 0


def test_qualify_activates_validates_and_adds_to_counter():
  db, norm = _db_with_candidate()
  db.qualify(norm.id, 55, type="descriptive", step=4, time="Day 1 09:40")
  assert norm.status == Status.QUALIFIED and norm.qualified
  assert (norm.utility, norm.type, norm.evaluated_step) == (55, "descriptive", 4)
  assert db.counter == 55


def test_reject_keeps_its_reason():
  db, norm = _db_with_candidate()
  db.reject(norm.id, RejectionReason.DUPLICATE, "same as abigail-1")
  assert norm.status == Status.REJECTED
  assert (norm.activated, norm.valid) == (False, False)
  assert norm.rejection_reason == "duplicate"
  assert norm.rejection_detail == "same as abigail-1"


@pytest.mark.parametrize("action", ["qualify", "reject"])
def test_only_candidates_can_be_judged(action):
  db, norm = _db_with_candidate()
  db.qualify(norm.id, 50)
  with pytest.raises(LifecycleError):
    if action == "qualify":
      db.qualify(norm.id, 50)
    else:
      db.reject(norm.id, RejectionReason.DUPLICATE)


def test_replace_deactivates_sources_but_keeps_them_valid():
  db = NormDatabase("Abigail Chen")
  a = db.add("No cigarettes inside.", "injunctive", 80, origin="created",
             qualified=True)
  b = db.add("No cigars inside.", "injunctive", 60, origin="created",
             qualified=True)
  abstract = db.add("No smoking indoors.", "injunctive", 70,
                    origin=Origin.SYNTHESIS, replaces=[a.id, b.id])
  with pytest.raises(LifecycleError):  # Not qualified yet.
    db.replace([a.id, b.id], abstract.id)
  db.qualify(abstract.id, 70)
  db.replace([a.id, b.id], abstract.id)
  assert a.status == b.status == Status.REPLACED
  assert (a.activated, a.valid) == (False, True)
  assert a.replaced_by == abstract.id and abstract.replaces == [a.id, b.id]
  assert db.qualified() == [abstract]
  with pytest.raises(LifecycleError):  # Already replaced.
    db.replace([a.id], abstract.id)


def test_values_are_checked():
  with pytest.raises(ValueError):
    PersonalNorm(id="x", content="Be nice.", utility=0, type="injunctive")
  with pytest.raises(ValueError):
    PersonalNorm(id="x", content="Be nice.", utility=50, type="moral")
  db = NormDatabase("A B")
  assert db.add("Be nice.", "injunctive", 400, origin="created").utility == 100


def test_json_round_trip():
  db, norm = _db_with_candidate()
  db.qualify(norm.id, 60)
  other = db.add("Shout a lot.", "descriptive", 20, origin="observation")
  db.reject(other.id, RejectionReason.CONFLICTS_WITH_NORM, "contradicts")
  data = json.loads(json.dumps(db.to_json()))
  copy = NormDatabase.from_json(data)
  assert copy.to_json() == db.to_json()
  assert copy.add("Next.", "injunctive", 5, origin="created").id == "carlos-3"
  assert copy.counter == 60
