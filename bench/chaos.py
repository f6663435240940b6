"""A run through a misbehaving endpoint: retried, recorded, never invented.

The mini café plays through tests/fault_proxy.py, which fails a share of
chat calls (default 20%) with timeouts, HTTP 500, 429 with Retry-After,
connection resets, bodies that are not JSON, answers that break the
schema and answers cut short, in front of the fake server (schema-valid
answers, tests/schema_answers.py) or, with --base-url/--model, a real
endpoint. It prints the calls, the faults injected by kind, the logical
calls that a retry saved and the failures recorded, and checks that:

  - the run completed all its slots;
  - every agent has an action record or a failure record in every slot;
  - every logical call that a fault made fail is a `failure` record, and
    a talk that a failed turn ended has that speaker's `Talk` failure,
    unless the endpoint was down (the fault survived the client's
    retries: unreachable, a timeout, 5xx, 429): then its slot was thrown
    away and played again (runs/outage.py), and run.log says so;
  - no operation got an answer the model did not give: every answer a
    call returned, and every action and conversation turn recorded,
    is in a content the upstream sent and the proxy passed on unaltered;
  - no model read a non-answer: no prompt holds an act's no-action
    marker, a line of talk (`Name: "words"`) the model did not give, or
    a talk in which nothing was said.

  .venv/bin/python bench/chaos.py                  # 5 slots, fake server
  .venv/bin/python bench/chaos.py --steps 2 --timeout 1
  .venv/bin/python bench/chaos.py --base-url http://localhost:8000/v1 \\
      --model Qwen/Qwen2.5-7B-Instruct

It ends with `chaos run complete, 0 invented answers, every injected
failure accounted for` and exit 0, or says what does not hold and exits 1.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import json
import re
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia import observations, runner  # noqa: E402
from crsec_concordia.components.structured_act import TALK_TAG as TALK_OP  # noqa: E402
from crsec_concordia.game_masters.utterances import clean_utterance  # noqa: E402
from crsec_concordia.models import EndpointConfig, make_model  # noqa: E402
from crsec_concordia.interviews.stated_table import read_stated  # noqa: E402
from crsec_concordia.models.scripts import strings  # noqa: E402
from crsec_concordia.operations.names import APART_TAGS  # noqa: E402
from crsec_concordia.rundir.format import LOG_JSON  # noqa: E402
from tests import schema_answers  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402
from tests.fault_proxy import CALL_HEADER, KINDS, FaultProxy  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "scenarios" / "hobbs_cafe_mini.yaml"


class CallLog:
  """Every logical model call (all its attempts) and how it ended.

  The model's `sample_json` is wrapped to number each call and the client's
  `create` to send that number in a header, so the proxy's log groups the
  attempts (HTTP retries and new samples) of one call.
  """

  def __init__(self):
    self.calls: dict[str, dict[str, Any]] = {}
    self._ids = itertools.count(1)
    self._local = threading.local()
    self._lock = threading.Lock()

  @contextlib.contextmanager
  def _call(self, tag: str) -> Iterator[dict[str, Any]]:
    call = {"id": f"c{next(self._ids)}", "tag": tag, "answer": None,
            "error": None, "raw": None, "done": False, "prompt": ""}
    with self._lock:
      self.calls[call["id"]] = call
    self._local.call = call["id"]
    try:
      yield call
      call["done"] = True
    except Exception as e:  # Recorded, then passed on as before.
      call["done"] = True
      call["error"] = f"{type(e).__name__}: {e}"
      call["message"] = str(e)
      call["raw"] = getattr(e, "raw", None)
      raise
    finally:
      self._local.call = None

  def install(self, model) -> None:
    sample_json = model.sample_json
    poster = model._poster  # pylint: disable=protected-access
    post = poster.post
    log = self

    def logged_sample_json(prompt, schema, **kwargs):
      with log._call(kwargs.get("tag", "other")) as call:  # pylint: disable=protected-access
        call["prompt"] = prompt
        answer = sample_json(prompt, schema, **kwargs)
        # A copy: operations may change the answer they were given.
        call["answer"] = json.loads(json.dumps(answer))
        return answer

    def post_with_id(body, headers=None):
      call = getattr(log._local, "call", None)  # pylint: disable=protected-access
      if call:
        headers = {**(headers or {}), CALL_HEADER: call}
      return post(body, headers)

    model.sample_json = logged_sample_json
    poster.post = post_with_id


def parsed(text: str) -> Any:
  try:
    return json.loads(text)
  except ValueError:
    return None


# What a call the endpoint's outage failed says (models/endpoint_errors.py,
# models/outage.py): its slot was thrown away, not recorded.
OUTAGE_SAYS = ("not sent: the endpoint is down", "cannot reach",
               "did not answer in time", "answered HTTP 5", "answered HTTP 429")


def paused_slots(run_dir: Path) -> int:
  """How many times run.log says a slot was paused for an outage."""
  log = run_dir / runner.RUN_LOG
  text = log.read_text(encoding="utf-8") if log.exists() else ""
  return len(re.findall(r"slot \d+ paused: ", text))


def check(run_dir: Path, proxy: FaultProxy, calls: CallLog) -> dict[str, Any]:
  """The figures and every check that does not hold."""
  info = json.loads((run_dir / runner.RUN_JSON).read_text())
  records = [json.loads(line) for line in
             open(run_dir / runner.EVENTS, encoding="utf-8")]
  problems: list[str] = []
  steps = [r["step"] for r in records if r["kind"] == "step"]
  if info["status"] != "completed" or steps != list(
      range(1, info["max_steps"] + 1)):
    problems.append(f"run {info['status']} with slots {steps} of "
                    f"{info['max_steps']}")
  names = [a["name"] for a in json.loads(
      (run_dir / runner.SCENARIO_JSON).read_text())["agents"]]
  failures = [r for r in records if r["kind"] == "failure"]
  for step in steps:
    covered = {r["actor"] for r in records
               if r["kind"] == "action" and r["step"] == step}
    covered |= {r["agent"] for r in failures
                if r["step"] == step and r.get("op") == "Act"}
    problems += [f"slot {step}: no action and no failure for {n}"
                 for n in names if n not in covered]

  # Every call a fault made fail is a failure record (each record once).
  exchanges = collections.defaultdict(list)
  for e in proxy.log():
    exchanges[e.call].append(e)
  # A record may hold several calls' errors (the doer check's calls, or an
  # action's second ask and second look): each error accounts for one call.
  unmatched = [[r, str(r.get("error"))] for r in failures]
  # The stated-belief questions' failures are the table's, never records
  # (interviews/stated_table.py): each failed call there is an error row.
  stated = read_stated(run_dir)
  stated_errors = [e for e in stated["error"] if e]
  saved = failed = faults_saved = thrown = 0
  paused = paused_slots(run_dir)
  for call in calls.calls.values():
    if not call["done"]:
      continue
    faults = sum(bool(e.fault) for e in exchanges.get(call["id"], []))
    if call["error"] is None:
      saved += bool(faults)
      faults_saved += faults
      continue
    failed += 1
    message = call["message"]
    if call["tag"] in APART_TAGS:
      if not stated_errors:
        problems.append(f"call {call['id']} ({call['tag']}) failed with no "
                        f"error in the table: {call['error'][:160]}")
      else:
        stated_errors.pop()
      continue
    match = next((m for m in unmatched if message and message in m[1]), None)
    if match is None and paused and any(s in message for s in OUTAGE_SAYS):
      thrown += 1  # In a slot thrown away for the outage, played again.
    elif match is None:
      problems.append(f"call {call['id']} ({call['tag']}) failed with no "
                      f"failure record: {call['error'][:160]}")
    else:
      match[1] = match[1].replace(message, "", 1)
  if None in exchanges:
    problems.append(f"{len(exchanges[None])} chat requests outside any "
                    "logical call")

  # No invented answers: answers and records trace to clean contents.
  clean: dict[str | None, list[Any]] = collections.defaultdict(list)
  said: set[str] = set()
  for e in proxy.log():
    if e.fault is None and e.upstream_content is not None:
      clean[e.call].append(parsed(e.upstream_content))
      said.update(s.strip() for s in strings(parsed(e.upstream_content)))
  invented = []
  for call in calls.calls.values():
    if not call["done"]:
      continue  # Abandoned when the run ended: it gave nothing to anyone.
    if call["error"] is None and call["answer"] not in clean.get(
        call["id"], []):
      invented.append(f"call {call['id']} ({call['tag']}) returned "
                      f"{json.dumps(call['answer'])[:120]}")
  said_words = {" ".join(t.split()) for t in said}

  def given(text: str, speaker: str | None = None) -> bool:
    """Whether `text` is an answer the model gave: word for word (spacing
    aside), or, for a conversation turn, the words the game master keeps of
    one (quotes, a "Name:" prefix and stage directions removed; the fake
    server's answers never have them, the embedded model's do)."""
    text = " ".join(text.split())
    if text in said_words:
      return True
    return speaker is not None and any(
        clean_utterance(t, speaker) == text for t in said)

  for r in records:
    texts = []
    if r["kind"] == "action" and observations.is_no_action(r["action"]):
      # An agent whose answer failed: the act's marker (observations'
      # NO_ACTION_MARK), not an answer, with the Act failure beside it.
      if not any(f.get("agent") == r["actor"] and f["step"] == r["step"]
                 and f.get("op") == "Act" for f in failures):
        problems.append(f"slot {r['step']}: {r['actor']} has a no-action "
                        "marker and no Act failure record")
    elif r["kind"] == "action":
      texts = [(r["action"], None), (r.get("narration") or "", None)]
    elif r["kind"] == "conversation":
      texts = [(t["text"], t["speaker"]) for t in r["turns"]]
    invented += [f"slot {r['step']}: {r['kind']} text {t[:80]!r} is no "
                 "answer the model gave" for t, speaker in texts
                 if t and not given(t, speaker)]
  problems += invented
  log = run_dir / LOG_JSON
  memories = (json.loads(log.read_text()).get("entity_memories", {})
              if log.exists() else {})
  problems += unread(calls, records, names, given, memories)
  talks = [r for r in records if r["kind"] == "conversation"]
  for talk in talks:
    # A talk a failed turn ended: that speaker's Talk failure beside it.
    speaker = next((p for p in (talk["initiator"], talk["partner"])
                    if talk["ended"].startswith(f"{p}'s turn failed")), None)
    if speaker is not None and not any(
        f.get("agent") == speaker and f["step"] == talk["step"]
        and f.get("op") == TALK_OP for f in failures):
      problems.append(f"slot {talk['step']}: a talk ended by {speaker}'s "
                      "failed turn has no Talk failure record")
  requests = proxy.log()
  return {
      "calls": len(calls.calls), "requests": len(requests),
      "faults": proxy.faults(), "saved": saved, "failed_calls": failed,
      "faults_saved": faults_saved, "paused_slots": paused,
      "thrown_away_calls": thrown,
      "failure_records": len(failures), "invented": len(invented),
      "talks": len(talks), "talks_failed": sum(
          "turn failed" in t["ended"] for t in talks),
      "talks_silent": sum(not t["turns"] for t in talks),
      "problems": problems, "status": info["status"], "slots": len(steps),
  }


def unread(calls: CallLog, records: Sequence[dict[str, Any]],
           names: Sequence[str], given,
           memories: Mapping[str, Sequence[str]] | None = None) -> list[str]:
  """The non-answers a prompt gave a model, or an agent's memory (what it
  observed: log.json's entity_memories) holds: an act's no-action marker,
  a line of talk no answer gave (`given`), or the header of a talk in
  which nothing was said (delivered, it tells both that they talked)."""
  silent = [observations.format_conversation(
      observations.Stamp(r["day"], r["clock"], r["step"]), r["initiator"],
      r["partner"], r["topic"], []).rstrip() for r in records
            if r["kind"] == "conversation" and not r["turns"]]
  lines = re.compile("(" + "|".join(re.escape(n) for n in names)
                     + r'): "([^"\n]*)"')
  problems = []
  texts = [(c["prompt"], f"call {c['id']} ({c['tag']})")
           for c in calls.calls.values()]
  texts += [(m, f"{name}'s memory") for name, held in (memories or {}).items()
            for m in held]
  for prompt, where in texts:
    if observations.NO_ACTION_MARK in prompt:
      at = prompt.index(observations.NO_ACTION_MARK)
      problems.append(f"{where} read a no-action marker: "
                      f"{prompt[max(0, at - 60):at + 40]!r}")
    problems += [f"{where} read a line of talk no answer gave: "
                 f"{m[1]}: {m[2][:80]!r}" for m in lines.finditer(prompt)
                 if m[2] and not given(m[2], m[1])]
    problems += [f"{where} read a talk in which nothing was said: {h!r}"
                 for h in silent if h in prompt]
  return problems


def culprit(error: BaseException) -> str | None:
  """The last two files of the project's own code (not the model client's,
  not this bench's) the error went through: where it should have been caught.
  """
  found: list[str] = []
  tb = error.__traceback__
  while tb is not None:
    path = Path(tb.tb_frame.f_code.co_filename)
    if (path.is_relative_to(ROOT) and ".venv" not in path.parts
        and path.parent.name not in ("bench", "models")):
      where = f"{path.relative_to(ROOT)}:{tb.tb_lineno}"
      if found and found[-1].split(":")[0] == str(path.relative_to(ROOT)):
        found[-1] = where
      else:
        found.append(where)
    tb = tb.tb_next
  return " -> ".join(found[-2:]) or None


def chaos_run(out: Path, *, steps: int | None, seed: int, rate: float,
              kinds: Sequence[str], timeout: float, base_url: str | None,
              model_name: str | None, api_key: str | None,
              embedder=None) -> dict[str, Any]:
  """Plays the mini café through the proxy; returns `check`'s figures."""
  fake = None
  if base_url is None:
    fake = FakeOpenAI().start()
    fake.responder = schema_answers.responder()
    base_url, model_name = fake.base_url, "fake-model"
  proxy = FaultProxy(base_url, rate=rate, seed=seed, kinds=kinds,
                     hold=timeout + 1.0, api_key=api_key,
                     retry_after=1).start()
  try:
    endpoint = EndpointConfig(base_url=proxy.base_url, api_key=api_key or
                              "chaos", model=model_name, timeout=timeout)
    model = make_model(endpoint, seed=seed)
    calls = CallLog()
    calls.install(model)
    run_dir, crash = out / "chaos", None
    try:
      runner.run_episode(MINI, arm="normative", seed=seed, out_dir=run_dir,
                         steps=steps, cache=False, progress=False,
                         model=model, embedder=embedder)
    except Exception as e:  # pylint: disable=broad-except
      # What a fault did to the whole run is a finding, not a traceback.
      crash = f"the run raised {type(e).__name__}: {str(e)[:160]}"
      if (where := culprit(e)) is not None:
        crash += f" (in {where})"
    figures = check(run_dir, proxy, calls)
    if crash:
      figures["problems"].insert(0, crash)
    return figures
  finally:
    proxy.stop()
    if fake is not None:
      fake.stop()


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=None,
                      help="slots to play (default: the scenario's 5)")
  parser.add_argument("--seed", type=int, default=1)
  parser.add_argument("--rate", type=float, default=0.2,
                      help="share of chat calls that fail")
  parser.add_argument("--kinds", default=",".join(KINDS),
                      help=f"faults to inject, of {','.join(KINDS)}")
  parser.add_argument("--timeout", type=float, default=None,
                      help="the client's timeout in seconds (a timeout "
                      "fault holds a request 1 s longer); default 3 against "
                      "the fake server, 180 against --base-url")
  parser.add_argument("--base-url", default=None,
                      help="a real endpoint instead of the fake server")
  parser.add_argument("--model", default=None)
  parser.add_argument("--api-key", default=None)
  args = parser.parse_args(argv)
  if args.base_url and not args.model:
    parser.error("--base-url needs --model")
  if args.timeout is None:
    args.timeout = 180.0 if args.base_url else 3.0
  with tempfile.TemporaryDirectory() as tmp:
    r = chaos_run(Path(tmp), steps=args.steps, seed=args.seed,
                  rate=args.rate, kinds=args.kinds.split(","),
                  timeout=args.timeout, base_url=args.base_url,
                  model_name=args.model, api_key=args.api_key)
  print(f"slots played: {r['slots']} ({r['status']})")
  print(f"calls: {r['calls']} logical, {r['requests']} HTTP requests")
  print("faults injected: " + ", ".join(
      f"{k} {n}" for k, n in r["faults"].items())
        + f" (total {sum(r['faults'].values())})")
  print(f"calls retried successfully: {r['saved']} (their faults: "
        f"{r['faults_saved']})")
  print(f"calls failed: {r['failed_calls']}; failures recorded: "
        f"{r['failure_records']}; in slots thrown away for an outage and "
        f"played again: {r['thrown_away_calls']} ({r['paused_slots']} "
        "pauses)")
  print(f"talks: {r['talks']} held, {r['talks_failed']} ended by a failed "
        f"turn ({r['talks_silent']} before a word was said)")
  for problem in r["problems"]:
    print(f"PROBLEM: {problem}")
  if r["problems"]:
    return 1
  print("chaos run complete, 0 invented answers, every injected failure "
        "accounted for")
  return 0


if __name__ == "__main__":
  sys.exit(main())
