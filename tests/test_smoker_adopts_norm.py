"""With the real embedded model: a smoker told not to smoke indoors adopts it.

The paper's case study (Carlos Gomez) in miniature: an ordinary smoker with
an empty norm database hears an entrepreneur say smoking indoors is not
allowed; his receiver side (IdentifyNorm) and evaluation (ImmediateEvaluation)
must leave a qualified norm that means "No smoking indoors" by the project's
embedder. `bench/smoker_adoption.py` measures the pass rate over seeds.
"""

import pytest

from crsec_concordia.models import EndpointConfig, make_model
from tests.smoker_case import SMOKER_CASE_SEED, smoker_adopts

pytestmark = pytest.mark.embedded


def test_smoker_adopts_no_smoking_indoors():
  model = make_model(EndpointConfig(), seed=SMOKER_CASE_SEED)
  adopted, best, norms = smoker_adopts(model)
  assert adopted, f"best match {best:.2f}; norms: {norms}"
