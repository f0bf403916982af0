"""Model backends behind one small interface, and the ``Models`` registry of roles."""

from .base import ChatDelta, ChatModel, Completion, Embedder, GenerationOptions, Message, ModelInfo
from .registry import Models

__all__ = ["ChatDelta", "ChatModel", "Completion", "Embedder", "GenerationOptions", "Message", "ModelInfo",
           "Models"]
