"""Scripts that run INSIDE the box (stdlib only; bound read-only at ``/sbx/inbox``).

``host`` runs the untrusted solution and answers calls; ``judge`` runs the tests and writes the
verdict; ``wire`` is the framing and the safe value encoding between them; ``relay`` forwards one
loopback port to the endpoint socket. Nothing here imports ``skillgrad``.
"""
