"""Local test servers for skillgrad's own tests and benchmarks (127.0.0.1 only)."""

from tests.servers.fake_llm import LLAMACPP_REJECTION, FakeLLMServer, Fault, Recorded, serve

__all__ = ["LLAMACPP_REJECTION", "FakeLLMServer", "Fault", "Recorded", "serve"]
