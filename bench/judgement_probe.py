"""How well the model judges: the referee, the bill check and DetectConflict.

Labelled café cases (actions written by the 1.5B model in seed-1 runs of
the mini café, a few written by hand) go through the same calls a run
makes: the general adjudication, the focused occasion check (with its
embedding gate) and DetectConflict against one norm. Prints right/total for
each and every miss, so a new model or prompt can be compared with the
embedded one before a long run. Any endpoint: set CRSEC_BASE_URL and
CRSEC_MODEL (or OPENAI_*); by default the embedded model.
Usage: .venv/bin/python bench/judgement_probe.py
"""

import sys

sys.path.insert(0, ".")

from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.game_masters import adjudication  # noqa: E402
from crsec_concordia.game_masters import occasion_check  # noqa: E402
from crsec_concordia.models import EndpointConfig, make_model  # noqa: E402
from crsec_concordia.norms import PersonalNorm  # noqa: E402
from crsec_concordia.operations.detect_conflict import detect_conflict  # noqa: E402
from crsec_concordia.scenarios import load_scenario  # noqa: E402

# (actor, action, the behaviour ids a fair referee sees)
ACTIONS = [
    ("Carlos Gomez", "Carlos Gomez lights one cigarette after another right there at the table.", {"smoking_indoors"}),
    ("Carlos Gomez", "Carlos Gomez lights another cigarette right at the table inside the café.", {"smoking_indoors"}),
    ("Carlos Gomez", "Carlos Gomez reads new lines aloud in a booming voice in the indoor room of the café.", {"loud"}),
    ("Tom Gomez", "Tom Gomez plays music loudly from his laptop speakers and laughs with a friend.", {"loud"}),
    ("Carlos Gomez", "Carlos Gomez steps out onto the terrace and lights a cigarette there.", {"smoking_outside"}),
    ("Tamara Rodriguez", "Tamara Rodriguez whispers to the server and keeps her voice low.", {"quiet"}),
    ("Tom Gomez", "Tom Gomez takes a quick walk to the outdoor terrace.", set()),
    ("Tamara Rodriguez", "Tamara Rodriguez continues reading a book on parenting.", set()),
    ("Abigail Chen", "Abigail Chen goes outside the café to enjoy the fresh air and the smell of coffee.", set()),
    ("Abigail Chen", "Abigail Chen prepares additional food boxes for the next drive.", set()),
    ("Carlos Gomez", "Carlos Gomez stops smoking now, thank you. I'm glad you're willing to make a positive impact.", set()),
]
# Answers to "The server brings X the bill ... What does X do about the bill?"
BILL_ANSWERS = [
    ("Tom Gomez", "Tom Gomez takes out his wallet, counting the total amount of money on the bill. He then decides to pay the bill without tipping, following his principles.", {"refused_tip"}),
    ("Tom Gomez", "Tom Gomez looks at the bill and calculates the total. He then takes a deep breath and says, 'I'll pay this bill. I can't afford to tip.'", {"refused_tip"}),
    ("Tamara Rodriguez", "Tamara Rodriguez sits down at the table, places her money on the table, and pays the bill. She does not add a tip as per her personal norms.", {"refused_tip"}),
    ("Carlos Gomez", "Carlos Gomez pays exactly what the bill says and goes back to his poem.", {"refused_tip"}),
    ("Tom Gomez", "Tom Gomez pays for his coffee and walks back to his table.", {"refused_tip"}),
    ("Abigail Chen", "Abigail Chen takes the bill to the server and asks if she can pay with her own money. The server gives her a card, and Abigail Chen hands it over to the server.", {"refused_tip"}),
    ("Tamara Rodriguez", "Tamara Rodriguez carefully counts the bill for the coffee and food, then adds a tip to ensure the café stays pleasant for everyone.", {"tipped"}),
    ("Abigail Chen", "Abigail Chen pays the bill for the coffee and food and gives a small tip to the server.", {"tipped"}),
    ("Abigail Chen", "Abigail Chen pays the bill as usual, following her habit of leaving a tip to show her appreciation for the service.", {"tipped"}),
    ("Abigail Chen", "Abigail Chen hands the server a twenty and says, 'Keep the change, thank you!'", {"tipped"}),
    ("Tamara Rodriguez", "Tamara Rodriguez reads a book on parenting at the counter, waiting for customers to come in for breakfast.", set()),
    ("Carlos Gomez", "Carlos Gomez lights another cigarette on the counter while writing a poem.", set()),
    ("Tom Gomez", "Tom Gomez turns up the music on his laptop.", set()),
    ("Tamara Rodriguez", "Tamara Rodriguez heads to the outdoor terrace to enjoy her morning coffee.", set()),
]
# (norm, actor, action, breaks it?)
CONFLICTS = [
    ("No smoking indoors.", "Carlos Gomez", "Carlos Gomez lights one cigarette after another right there at the table.", True),
    ("No smoking indoors.", "Abigail Chen", "Abigail Chen leaves the outdoor terrace to go inside the café, where she lights one cigarette after another.", True),
    ("Be quiet in public places.", "Carlos Gomez", "Carlos Gomez reads new lines aloud in a booming voice in the indoor room of the café.", True),
    ("Be quiet in public places.", "Tom Gomez", "Tom Gomez plays music loudly from his laptop speakers and laughs with a friend.", True),
    ("Tip after meals.", "Tamara Rodriguez", "Tamara Rodriguez pays the bill. She does not add a tip as per her personal norms.", True),
    ("No smoking indoors.", "Tamara Rodriguez", "Tamara Rodriguez heads to the outdoor terrace to enjoy her morning coffee and the fresh air.", False),
    ("No smoking indoors.", "Tom Gomez", "Tom Gomez reads a book in the coffee shop (outside terrace).", False),
    ("No smoking indoors.", "Abigail Chen", "Abigail Chen sets up the food drives for the community.", False),
    ("Be quiet in public places.", "Carlos Gomez", "Carlos Gomez writes at his corner table inside the café.", False),
    ("Be quiet in public places.", "Tamara Rodriguez", "Tamara Rodriguez continues reading a book on parenting.", False),
    ("Tip after meals.", "Tom Gomez", "Tom Gomez takes a quick walk to the outdoor terrace.", False),
]


def report(name: str, results: list[tuple[bool, str]]) -> None:
  right = sum(ok for ok, _ in results)
  print(f"{name}: {right}/{len(results)} right")
  for ok, line in results:
    if not ok:
      print(f"   miss: {line}")


def main() -> None:
  scenario = load_scenario("hobbs_cafe_mini")
  behaviours = [b.model_dump(mode="json") for b in scenario.behaviours]
  ids = [b["id"] for b in behaviours]
  model = make_model(EndpointConfig.resolve(), seed=1)
  embedder = shared_embedder()

  results = []
  for actor, action, want in ACTIONS:
    answer = model.sample_json(
        adjudication.adjudication_prompt(place=scenario.setting,
                                         behaviours=behaviours, actor=actor,
                                         action=action),
        adjudication.adjudication_schema(ids), max_tokens=160, temperature=0.0)
    got = (set(adjudication.behaviours_of(answer, ids))
           if adjudication.has_evidence(answer["evidence"]) else set())
    results.append((got == want, f"want {sorted(want)} got {sorted(got)} | {action}"))
  report("referee (general call)", results)

  bill = next(o for o in scenario.occasions if o.behaviours)
  wanted = [b for b in behaviours if b["id"] in bill.behaviours]
  results = []
  for actor, action, want in BILL_ANSWERS:
    check, _ = occasion_check.check_occasion(
        model, place=scenario.setting, situation=bill.situation.replace("{actor}", actor),
        actor=actor, action=action, behaviours=wanted,
        similarity=embedder.pair_similarity)
    got = {check["behaviour"]} if check["accepted"] else set()
    results.append((got == want, f"want {sorted(want)} got {sorted(got)} "
                    f"({check['behaviour']}, similarity {check['similarity']}) | {action}"))
  report("bill check (focused call + similarity gate)", results)

  results = []
  for norm, actor, action, breaks in CONFLICTS:
    verdict = detect_conflict(
        model, actor=actor, behaviour=action, place="indoors",
        norm=PersonalNorm(id="n", content=norm, utility=80, type="injunctive"),
        on_failure=None)
    got = bool(verdict and verdict[0])
    results.append((got == breaks, f"{norm} | want {'breach' if breaks else 'none'} | {action}"))
  report("DetectConflict", results)


if __name__ == "__main__":
  main()
