"""DALI's ``nvidia.dali.plugin.pytorch.experimental.proxy``: ``DALIServer`` and ``DataLoader``.

    with DALIServer(pipe) as server:
        dataset = MyDataset(files, transform=server.proxy)
        loader = DataLoader(server, dataset, batch_size=32, num_workers=4)

The server and loader are :mod:`chute.torch.proxy`'s, under DALI's names.
"""

from __future__ import annotations

from typing import Any

from chute.torch.proxy import DataLoader, Server

__all__ = ["DALIServer", "DataLoader"]


class DALIServer(Server):
    """DALI's ``DALIServer(pipeline, deterministic=False)``: runs ``pipeline`` for DataLoader workers.

    ``start_thread()`` / ``stop_thread()`` (or ``with``) start and stop it;
    ``proxy`` is the picklable callable that a Dataset calls per sample;
    ``produce_data(batch)`` swaps a collated batch's tickets for the outputs.
    Batches run in the order the workers finish them; ``deterministic=True``
    (DALI: batches in sampler order) is not available yet and says so.
    """

    def __init__(self, pipeline: Any, deterministic: bool = False):
        if deterministic:
            raise NotImplementedError(
                "DALIServer(deterministic=True) is not supported yet: batches run in the order "
                "the DataLoader workers deliver them; pass deterministic=False"
            )
        super().__init__(pipeline)
        self.deterministic = deterministic

    def start_thread(self) -> None:
        """Build the pipeline and start serving (DALI's name for ``start()``)."""
        self.start()

    def stop_thread(self) -> None:
        """Stop serving (DALI's name for ``stop()``)."""
        self.stop()
