"""Module-level Dataset classes for the proxy tests (spawned DataLoader workers import them)."""

from __future__ import annotations

import os

import torch.utils.data


class FileBytesDataset(torch.utils.data.Dataset):
    """(transform(file bytes), index) for each file; the transform is the pipeline proxy."""

    def __init__(self, files, transform):
        self.files = files
        self.transform = transform

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            data = f.read()
        return self.transform(data), i


class KeywordDataset(torch.utils.data.Dataset):
    """Calls the proxy with keyword inputs and reports the worker's pid."""

    def __init__(self, n, transform):
        self.n = n
        self.transform = transform

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"out": self.transform(b=[i, i], a=[10 * i]), "pid": os.getpid()}
