"""Language models: any OpenAI-compatible endpoint, the embedded default, a test script."""

from crsec_concordia.models.base import (
    EndpointError,
    StructuredLanguageModel,
    StructuredModel,
    StructuredOutputError,
    TaggedModel,
    UsageMeter,
)
from crsec_concordia.models.concordia_adapter import (ConcordiaModelAdapter,
                                                      as_structured)
from crsec_concordia.models.config import EndpointConfig, make_model
from crsec_concordia.models.openai_compatible import OpenAICompatibleModel
from crsec_concordia.models.scripted import ScriptedModel

__all__ = [
    "ConcordiaModelAdapter", "EndpointConfig", "EndpointError",
    "OpenAICompatibleModel", "ScriptedModel", "StructuredLanguageModel",
    "StructuredModel", "StructuredOutputError",
    "TaggedModel", "UsageMeter", "as_structured", "make_model",
]
