"""The reference HTTP deployment: a shuffler service, an analyzer service and a client simulator.

Needs the optional extra ``privsum[serve]`` (Starlette and Uvicorn) for the two services; the
simulator uses only the standard library. Start them with ``python -m privsum shuffler``,
``python -m privsum analyzer`` and ``python -m privsum simulate`` (`privsum.serve.cli`);
``docs/deployment.md`` says what the reference shuffler provides and what it does not.
"""

__all__ = ["RECORD_HEADER_BYTES", "pack_records", "unpack_records"]

from privsum.serve.records import RECORD_HEADER_BYTES, pack_records, unpack_records
