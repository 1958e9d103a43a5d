"""Notebook 04 (the transformer block): the course code that does one of its exercises' work,
and the name parts of torch's ready-made normalisations (refused in ``layer_norm``)."""

import torch
from torch import nn

import lmcourse.nn.block

__all__ = ["NORMS", "REFERENCE", "SCRIPTED"]

NORMS = ("layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm")
# a scripted (TorchScript) copy of the reference runs through these classes' code
SCRIPTED = (torch.jit.RecursiveScriptModule, torch.jit.ScriptModule)
REFERENCE = (lmcourse.nn.block, nn.TransformerEncoderLayer)
