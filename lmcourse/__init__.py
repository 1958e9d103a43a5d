"""lmcourse: the helper package of the lmcourse notebooks (language models, built by hand)."""

from .runtime import get_profile, is_autograding, pick_device, seed_everything, setup

__version__ = "0.1.0"
__all__ = ["setup", "get_profile", "pick_device", "seed_everything", "is_autograding", "__version__"]
