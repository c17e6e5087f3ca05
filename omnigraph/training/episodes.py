"""What the two episodic anomaly-detection trainers (REFI-GAD, ARC) share."""
from __future__ import annotations

import numpy as np
import torch

#: the best-epoch Lightning checkpoint of an episodic run with ``out_dir`` (``last.ckpt``, to resume,
#: is written as well)
LOSS_CHECKPOINT = {"monitor": "train_loss_epoch", "mode": "min"}


def episode_generator(seed: int, epoch: int, index: int) -> torch.Generator:
    """An independent generator per ``(seed, epoch, index)`` (``index``: the episode or the source graph)."""
    state = np.random.SeedSequence([int(seed), int(epoch), int(index)]).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 31 | int(state[1]) >> 1)


__all__ = ["LOSS_CHECKPOINT", "episode_generator"]
